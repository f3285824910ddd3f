package grant

import (
	"time"
)

// fieldParser converts split values to typed fields, keeping the first
// error with its field name and line number.
type fieldParser struct {
	schema string
	names  []string
	values []string
	err    error
}

func (p *fieldParser) fail(i int, err error) {
	if p.err == nil && err != nil {
		p.err = &FieldError{Schema: p.schema, Field: p.names[i], Line: i + 1, Reason: err.Error()}
	}
}

func (p *fieldParser) str(i int, validate func(string) error) string {
	p.fail(i, validate(p.values[i]))
	return p.values[i]
}

func (p *fieldParser) uint(i int) uint64 {
	n, err := parseUint(p.values[i])
	p.fail(i, err)
	return n
}

func (p *fieldParser) time(i int) time.Time {
	t, err := parseTime(p.values[i])
	p.fail(i, err)
	return t
}

func (p *fieldParser) digest(i int) Digest {
	d, err := ParseDigest(p.values[i])
	p.fail(i, err)
	return d
}
