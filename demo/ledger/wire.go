package ledger

import "github.com/fencegate/fencegate/gate"

// ReceiptToJSON is r on the wire, for other services that speak the
// ledger's API (demo/resledger).
func ReceiptToJSON(r gate.Receipt) ReceiptJSON { return receiptToJSON(r) }

// AnswerToJSON is a on the wire, for other services that speak the
// ledger's API.
func AnswerToJSON(a gate.Answer) AnswerJSON { return answerToJSON(a) }
