"""The lines of the project's scenario files (testkit/scenariotext in Go):
a command, its words and key=value options, "#" comments, and "->"
expectations. Kept line for line with the Go reader, so that a file means
the same to both."""


class Args:
    """One line's words and options."""

    def __init__(self, text):
        self.words, self.opts = [], {}
        for f in text.split():
            k, sep, v = f.partition("=")
            if sep:
                self.opts[k] = v
            else:
                self.words.append(f)

    def uint(self, k, default):
        """Option k as a number, default when absent; a malformed value is
        an error the scenario's author must fix."""
        if k not in self.opts:
            return default
        v = self.opts[k]
        if not v.isdigit() or not v.isascii():
            raise ValueError("scenario: %s=%s is not a number" % (k, v))
        return int(v)


class Line:
    """One meaningful line: its 1-based number, its text without comment,
    whether it started with "->"."""

    def __init__(self, n, text, expect):
        self.n, self.text, self.expect = n, text, expect


def lines(f):
    """The file's non-empty lines with comments removed."""
    out = []
    for n, text in enumerate(f.read().split("\n"), 1):
        text = text.partition("#")[0].strip()
        if not text:
            continue
        expect = text.startswith("->")
        if expect:
            text = text[2:].strip()
        out.append(Line(n, text, expect))
    return out
