package report

import "github.com/fencegate/fencegate/gate"

// ReportPath is the registry endpoint a Reporter POSTs to.
const ReportPath = "/v1/gates/report"

// SchemaReport names the report format.
const SchemaReport = "gateReport.v1"

// Limits of one report, enforced by the Reporter (it trims) and by the
// registry (it refuses).
const (
	// ReportBytesMax bounds a report's JSON body, 64 KiB.
	ReportBytesMax = 64 << 10
	// ResourcesPerReportMax bounds the resources one report describes.
	ResourcesPerReportMax = 64
	// DecisionsPerReportMax bounds the decisions one report carries.
	DecisionsPerReportMax = 32
	// UnknownPerReportMax bounds the open UNKNOWN operations listed.
	UnknownPerReportMax = 16
	// RecordsPerResourceMax bounds the alarm and quarantine rows shown
	// per resource (the last ones).
	RecordsPerResourceMax = 3
	// ResultsPerReportMax bounds the command results one report returns.
	ResultsPerReportMax = 16
	// TablesPerReportMax bounds the protected tables one report lists
	// (the counts cover all of them).
	TablesPerReportMax = 16
	// CommandsPerAnswerMax bounds the commands one answer carries.
	CommandsPerAnswerMax = 4
	// TextBytesMax bounds every free-text field (reasons, details,
	// notes, the service label), 256 bytes.
	TextBytesMax = 256
)

// Timing of the report loop.
const (
	// IntervalMsDefault is the Reporter's interval when none is set, 2 s.
	IntervalMsDefault = 2000
	// IntervalMsMin is the shortest interval a Reporter uses, 500 ms.
	IntervalMsMin = 500
	// ReportSpacingMsMin is the least time the registry allows between
	// two reports of one gate identity, 250 ms (half IntervalMsMin, so
	// timer jitter never trips it); a faster one is answered 429.
	ReportSpacingMsMin = 250
	// CommandTTLMs is how long a command may be applied after the
	// registry issued it, 2 min (registry clock, plus the gate's skew
	// bound).
	CommandTTLMs = 120_000
)

// Report is what a gate tells the registry about itself. The gate's
// identity is the authenticated caller, never a field.
type Report struct {
	Schema string `json:"schema"` // SchemaReport
	// Service is a free label ("ledger"), at most TextBytesMax bytes.
	Service string `json:"service,omitempty"`
	// LogID changes whenever the gate's decision Log is new (a restart),
	// so the registry does not mistake new sequence numbers for old ones.
	LogID        string `json:"logId"`
	ReportedAtMs int64  `json:"reportedAtMs"` // gate clock
	IntervalMs   uint64 `json:"intervalMs"`   // when to expect the next one
	// Counters are the gate's decision counts by outcome since it started.
	Counters       map[string]uint64 `json:"counters,omitempty"`
	Resources      []ResourceView    `json:"resources"`
	ResourcesTotal int               `json:"resourcesTotal"` // how many the gate knows
	Decisions      []Decision        `json:"decisions"`      // the last ones, oldest first
	Unknown        []UnknownOp       `json:"unknown"`        // oldest first
	UnknownOpen    int               `json:"unknownOpen"`
	Results        []Result          `json:"results"` // outcomes of commands since the last report
	// Coverage is the SQL gate's count of protected-table writes with and
	// without an accept of their resource (gate.Coverage), at most
	// TablesPerReportMax tables; absent where the gate has no protected
	// tables to guard (objgate, redisgate) or its Source does not read it.
	Coverage *gate.Coverage `json:"coverage,omitempty"`
}

// ResourceView is one resource's state at the gate.
type ResourceView struct {
	Resource            string       `json:"resource"`
	Mode                string       `json:"mode"` // shadow or enforce
	HighestFence        uint64       `json:"highestFence"`
	LastSegmentSeq      uint64       `json:"lastSegmentSeq"`
	MinPolicyGeneration uint64       `json:"minPolicyGeneration"`
	Paused              bool         `json:"paused"`
	PausedReason        string       `json:"pausedReason,omitempty"`
	Floor               uint64       `json:"floor"`     // stated at the last resume, 0: never
	FloorAtMs           int64        `json:"floorAtMs"` // gate clock, 0: never
	Quarantined         int          `json:"quarantined"`
	Alarms              int          `json:"alarms"`
	Recent              []RecordView `json:"recent,omitempty"` // last alarm and quarantine rows, oldest first
	LastAction          *ActionView  `json:"lastAction,omitempty"`
}

// RecordView is one alarm or quarantine row. Kind is the alarm's kind
// (FENCE_REGRESSION, REGRESSION_SUSPECTED) or QUARANTINED.
type RecordView struct {
	Kind   string `json:"kind"`
	Fence  uint64 `json:"fence"`
	Detail string `json:"detail"`
	AtMs   int64  `json:"atMs"`
}

// ActionView is one recorded operator action (a resume, a mode change).
type ActionView struct {
	Action   string `json:"action"`
	Operator string `json:"operator"`
	Detail   string `json:"detail"`
	AtMs     int64  `json:"atMs"`
}

// Decision is one answer of the gate, as Log.Note saw it.
type Decision struct {
	Seq          uint64 `json:"seq"` // 1, 2, … within one LogID
	AtMs         int64  `json:"atMs"`
	Resource     string `json:"resource"` // "" when the envelope named no valid resource
	Fence        uint64 `json:"fence"`
	Segment      uint64 `json:"segment"`
	Caller       string `json:"caller"`
	Outcome      string `json:"outcome"` // a gate.Outcome, or ERROR (the database failed)
	Reason       string `json:"reason,omitempty"`
	HighestFence uint64 `json:"highestFence,omitempty"` // decided against (rejections)
}

// UnknownOp is an operation whose receipt query answered UNDETERMINED.
type UnknownOp struct {
	Resource    string `json:"resource"`
	OperationID string `json:"operationId"`
	SinceMs     int64  `json:"sinceMs"` // gate clock, first UNDETERMINED
}

// Command result outcomes.
const (
	ResultApplied  = "applied"  // the gate resumed the resource and recorded it
	ResultRefused  = "refused"  // the gate's rule refused (not paused, floor not above highestFence)
	ResultRejected = "rejected" // the command did not verify, is expired, replayed or not for this gate
	ResultDisabled = "disabled" // this gate takes no commands (no CommandConfig)
	ResultFailed   = "failed"   // the database failed; the operator may ask again
)

// Result is what became of one command at the gate.
type Result struct {
	ID      string `json:"id"`
	Outcome string `json:"outcome"`
	Message string `json:"message"`
}

// Answer is the registry's reply to a report.
type Answer struct {
	Gate       string          `json:"gate"`       // the identity the registry saw
	IntervalMs uint64          `json:"intervalMs"` // 0: keep yours
	Commands   []SignedCommand `json:"commands"`
}

// SignedCommand is a command's exact JSON bytes and the registry's proof
// over them (grant.SignCommand).
type SignedCommand struct {
	Command string `json:"command"`
	Proof   string `json:"proof"`
}

// Command is one operator action for a gate, confirmed by an admin on the
// registry's dashboard.
type Command struct {
	Schema      string `json:"schema"` // grant.SchemaGateCommand
	ID          string `json:"id"`
	Gate        string `json:"gate"`   // the gate identity it is addressed to
	Action      string `json:"action"` // ActionResume
	Resource    string `json:"resource"`
	Floor       uint64 `json:"floor"`
	Operator    string `json:"operator"` // the admin identity that confirmed it
	Note        string `json:"note"`
	IssuerEpoch uint64 `json:"issuerEpoch"`
	IssuedAtMs  int64  `json:"issuedAtMs"` // registry clock
	ExpiresAtMs int64  `json:"expiresAtMs"`
}

// ActionResume lifts a FENCE_REGRESSION pause with the stated floor.
const ActionResume = "resume"
