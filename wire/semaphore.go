package wire

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fencegate/fencegate/grant"
)

// A counting semaphore NAME with N permits is N slots, each an ordinary
// fenced resource named SlotResource(NAME, i) for i in [0, N): a permit
// is a grant on one slot, carrying that slot's resource and fence, and a
// gate keys its highestFence on the slot's name like any resource's. The
// slot name is NAME, a '/', then SlotSegmentPrefix and the slot index in
// decimal without leading zeros ("jobs/_slot.0", "jobs/_slot.2"): a
// valid canonical resource ID (grant.ValidateResource) whenever NAME is
// one and the whole fits in grant.ResourceBytesMax.
//
// The registry reserves the slot names for their semaphores: a plain
// acquire of one is refused (ErrInvalid), and so is a semaphore whose
// own name is one. Renewing, releasing and querying a permit use the
// slot's resource, as for any lease.
const (
	// SlotSegmentPrefix starts the last segment of a slot's resource name.
	SlotSegmentPrefix = "_slot."
	// PermitsMin and PermitsMax bound a semaphore's N (AcquireRequest.Permits).
	// The upper bound keeps a semaphore's slots one short listing
	// (the registry reads them all to find a free one).
	PermitsMin = 1
	PermitsMax = 64
)

// SlotResource returns the resource name of slot i of semaphore name.
func SlotResource(name string, i int) string {
	return name + "/" + SlotSegmentPrefix + strconv.Itoa(i)
}

// SlotOf reports whether resource is a semaphore slot's name, and if so
// the semaphore's name and the slot's index. Only the canonical spelling
// counts (no leading zeros, no sign).
func SlotOf(resource string) (name string, i int, ok bool) {
	cut := strings.LastIndexByte(resource, '/')
	if cut <= 0 {
		return "", 0, false
	}
	digits, found := strings.CutPrefix(resource[cut+1:], SlotSegmentPrefix)
	if !found || digits == "" || len(digits) > 1 && digits[0] == '0' {
		return "", 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || strconv.Itoa(n) != digits {
		return "", 0, false
	}
	return resource[:cut], n, true
}

// ValidateSemaphore checks a semaphore's name and permits: permits in
// [PermitsMin, PermitsMax], a canonical name that is not itself a slot,
// and every slot name a canonical resource ID. It returns an error
// wrapping ErrInvalid.
func ValidateSemaphore(name string, permits uint64) error {
	if permits < PermitsMin || permits > PermitsMax {
		return fmt.Errorf("%w: permits %d outside [%d, %d]", ErrInvalid, permits, PermitsMin, PermitsMax)
	}
	if err := grant.ValidateResource(name); err != nil {
		return fmt.Errorf("%w: resource: %v", ErrInvalid, err)
	}
	if _, _, slot := SlotOf(name); slot {
		return fmt.Errorf("%w: resource %s is a semaphore's slot, not a semaphore", ErrInvalid, name)
	}
	if _, read := ReadOf(name); read {
		return fmt.Errorf("%w: resource %s is a read/write lock's reader resource, not a semaphore", ErrInvalid, name)
	}
	if err := grant.ValidateResource(SlotResource(name, int(permits)-1)); err != nil {
		return fmt.Errorf("%w: resource %s: its slot names would not be canonical: %v", ErrInvalid, name, err)
	}
	return nil
}
