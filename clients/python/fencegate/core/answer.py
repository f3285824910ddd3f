"""How a registry call's result is read (client/core/answer.go)."""

from ..errors import OutcomeUnknown, Refused, RegistryError

OK = "ok"
LOST = "lost"          # may or may not have been applied
REFUSED = "refused"    # a definite "no": nothing was (or is) granted or held
RETRY = "retry"        # a definite "nothing changed, try again" (CONFLICT)


def code_of(err):
    """The registry code of err ('' when it carries none): wire.CodeOf."""
    return err.code if isinstance(err, RegistryError) else ""


def classify(err):
    """The class of a call's result, err being None or the exception the
    transport raised. Only a definite registry code or a Refused is a
    refusal; everything else is lost."""
    if err is None:
        return OK
    code = code_of(err)
    if code == "":
        return REFUSED if isinstance(err, Refused) else LOST
    if code == "UNAVAILABLE":
        return LOST
    if code == "CONFLICT":
        return RETRY
    if isinstance(err, OutcomeUnknown):
        return LOST
    return REFUSED
