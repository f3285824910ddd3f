package core

import (
	"errors"

	"github.com/fencegate/fencegate/wire"
)

// answer classifies a registry call's result.
type answer int

const (
	answerOK      answer = iota
	answerLost           // may or may not have been applied
	answerRefused        // a definite "no": nothing was (or is) granted or held
	answerRetry          // a definite "nothing changed, try again" (CONFLICT)
)

// classify maps err to an answer class. Only a definite registry code is a
// refusal; everything else is lost.
func classify(err error) answer {
	if err == nil {
		return answerOK
	}
	switch wire.CodeOf(err) {
	case "":
		if errors.Is(err, ErrRefused) {
			return answerRefused
		}
		return answerLost
	case "UNAVAILABLE":
		return answerLost
	case "CONFLICT":
		return answerRetry
	}
	if errors.Is(err, ErrOutcomeUnknown) {
		return answerLost
	}
	return answerRefused
}
