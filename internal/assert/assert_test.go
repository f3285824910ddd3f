// Proves Catch tells an assertion failure from success and lets any other
// panic through, so the tests built on it can fail.
package assert_test

import (
	"testing"

	"github.com/fencegate/fencegate/internal/assert"
)

func TestCatch(t *testing.T) {
	if f := assert.Catch(func() { assert.That(false, "fence %d", 7) }); f == nil || f.Message != "fence 7" {
		t.Fatalf("a failed assertion: %+v", f)
	}
	if f := assert.Catch(func() { assert.That(true, "never") }); f != nil {
		t.Fatalf("a kept assertion: %+v", f)
	}
	defer func() {
		if recover() != "other" {
			t.Fatal("another panic was swallowed")
		}
	}()
	assert.Catch(func() { panic("other") })
}
