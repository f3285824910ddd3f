package fakeclock

import (
	"strings"
	"testing"
	"time"
)

func TestScaledRefusesAFactorOutOfItsRange(t *testing.T) {
	for _, f := range []int{0, -1, ScaledFactorMax + 1} {
		if _, err := NewScaled(time.Unix(0, 0), f); err == nil || !strings.Contains(err.Error(), "want 1 to 1000") {
			t.Errorf("factor %d: want refused with the range, got %v", f, err)
		}
	}
	for _, f := range []int{ScaledFactorMin, ScaledFactorMax} {
		if _, err := NewScaled(time.Unix(0, 0), f); err != nil {
			t.Errorf("factor %d: %v", f, err)
		}
	}
}

func TestScaledRunsFactorTimesTheMachine(t *testing.T) {
	c, err := NewScaled(time.Unix(0, 0), 100)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	at := <-c.After(5 * time.Second) // 50 ms of the machine's
	took := time.Since(start)
	if took < 50*time.Millisecond || took > 2*time.Second {
		t.Fatalf("After(5s) at factor 100 took %v of the machine's, want about 50ms", took)
	}
	if got := at.Sub(time.Unix(0, 0)); got < 5*time.Second {
		t.Fatalf("After(5s) fired at %v, before 5s of the clock", got)
	}
	if c.Now().Before(at) {
		t.Fatal("the clock ran backwards")
	}
}
