package pggate

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// stateJSON is fencegate.state's answer.
type stateJSON struct {
	Resource            string `json:"resource"`
	Mode                string `json:"mode"`
	HighestFence        uint64 `json:"highest_fence"`
	Root                string `json:"root"`
	LastSeq             uint64 `json:"last_seq"`
	GrantDigest         string `json:"grant_digest"`
	GrantIssuedAtMs     *int64 `json:"grant_issued_at_ms"`
	MinPolicyGeneration uint64 `json:"min_policy_generation"`
	Paused              bool   `json:"paused"`
	PausedReason        string `json:"paused_reason"`
	FenceFloor          uint64 `json:"fence_floor"`
	FloorAtMs           *int64 `json:"floor_at_ms"`
}

// State returns the resource's stored fence state (a zero gate.FenceState in the
// default mode for a resource the gate never saw).
func State(ctx context.Context, q DBTX, resource string) (gate.FenceState, error) {
	var b string
	if err := q.QueryRowContext(ctx, `SELECT fencegate.state($1)::text`, resource).Scan(&b); err != nil {
		return gate.FenceState{}, fmt.Errorf("pggate: state: %w", err)
	}
	var s stateJSON
	if err := json.Unmarshal([]byte(b), &s); err != nil {
		return gate.FenceState{}, fmt.Errorf("pggate: state: %w", err)
	}
	st := gate.FenceState{Resource: s.Resource, Mode: gate.Mode(s.Mode), HighestFence: s.HighestFence, LastSegmentSeq: s.LastSeq,
		MinPolicyGeneration: s.MinPolicyGeneration, Paused: s.Paused, PausedReason: s.PausedReason, Floor: s.FenceFloor,
		GrantIssuedAt: fromMs(s.GrantIssuedAtMs), FloorAt: fromMs(s.FloorAtMs)}
	var err error
	if st.Root, err = digestOrZero(s.Root); err != nil {
		return st, fmt.Errorf("pggate: state: root: %w", err)
	}
	if st.GrantDigest, err = digestOrZero(s.GrantDigest); err != nil {
		return st, fmt.Errorf("pggate: state: grant: %w", err)
	}
	return st, nil
}

func fromMs(ms *int64) time.Time {
	if ms == nil {
		return time.Time{}
	}
	return time.UnixMilli(*ms).UTC()
}

func digestOrZero(s string) (grant.Digest, error) {
	if s == "" {
		return grant.Digest{}, nil
	}
	return grant.ParseDigest(s)
}

// QueryOperation answers MUTATION_UNKNOWN recovery (fencegate.receipt,
// gate.Judge) for an operation attempted under fence.
func QueryOperation(ctx context.Context, q DBTX, resource, operationID string, fence uint64) (gate.Answer, error) {
	var b string
	if err := q.QueryRowContext(ctx, `SELECT fencegate.receipt($1, $2, $3)::text`, resource, operationID, int64(fence)).Scan(&b); err != nil {
		return gate.Answer{}, fmt.Errorf("pggate: receipt: %w", err)
	}
	var a struct {
		Verdict      gate.Verdict      `json:"verdict"`
		HighestFence uint64            `json:"highestFence"`
		Receipts     []json.RawMessage `json:"receipts"`
	}
	if err := json.Unmarshal([]byte(b), &a); err != nil {
		return gate.Answer{}, fmt.Errorf("pggate: receipt: %w", err)
	}
	ans := gate.Answer{Verdict: a.Verdict, HighestFence: a.HighestFence}
	for _, r := range a.Receipts {
		rc, err := gate.DecodeReceipt(r)
		if err != nil {
			return ans, fmt.Errorf("pggate: receipt: %w", err)
		}
		ans.Receipts = append(ans.Receipts, rc)
	}
	return ans, nil
}

// Resume lifts a FENCE_REGRESSION pause once the operator states a
// registry fence floor above highestFence (gate.Resume); a refusal wraps
// gate.ErrResumeRefused.
func Resume(ctx context.Context, q DBTX, resource string, registryFloor uint64, operator, note string) error {
	_, err := q.ExecContext(ctx, `SELECT fencegate.resume($1, $2, $3, $4)`, resource, int64(registryFloor), operator, note)
	return operatorError("resume", err, gate.ErrResumeRefused)
}

// SetMode moves a resource shadow → enforce; a downgrade wraps
// gate.ErrModeDowngrade.
func SetMode(ctx context.Context, q DBTX, resource string, mode gate.Mode, operator string) error {
	_, err := q.ExecContext(ctx, `SELECT fencegate.set_mode($1, $2, $3)`, resource, string(mode), operator)
	return operatorError("set mode", err, gate.ErrModeDowngrade)
}

// SetMinPolicyGeneration raises the resource's minimum grant policy
// generation; it only rises.
func SetMinPolicyGeneration(ctx context.Context, q DBTX, resource string, gen uint64, operator string) error {
	if gen > gate.CounterMax {
		return fmt.Errorf("%w: min policy generation %d above %d", ErrRefused, gen, uint64(gate.CounterMax))
	}
	_, err := q.ExecContext(ctx, `SELECT fencegate.set_min_policy_generation($1, $2, $3)`, resource, int64(gen), operator)
	return operatorError("set min policy generation", err, ErrRefused)
}

// Protect is ProtectResource with the rows' resource in the column
// "resource".
func Protect(ctx context.Context, q DBTX, table string, mode gate.Mode, operator string) error {
	return ProtectResource(ctx, q, table, "resource", mode, operator)
}

// ProtectResource registers table and installs its coverage guard in
// mode (shadow → enforce only; a downgrade wraps gate.ErrModeDowngrade):
// the database then admits a row only when fencegate.apply accepted the
// row's own resource earlier in the same transaction (in enforce mode,
// for a table in enforce mode), which resource names (a column, or an
// SQL expression over the row's columns evaluated with search_path
// pg_catalog; one that does not evaluate on the table is refused,
// wrapping ErrRefused). Other rows are refused with StateUnguarded
// (enforce) or counted as ungated (shadow).
func ProtectResource(ctx context.Context, q DBTX, table, resource string, mode gate.Mode, operator string) error {
	_, err := q.ExecContext(ctx, `SELECT fencegate.protect($1::regclass, $2, $3, $4)`, table, string(mode), operator, resource)
	return operatorError("protect", err, gate.ErrModeDowngrade)
}

// Coverage reads the guard's counters: rows of protected tables written
// under an accept of their own resource (gated, per resource) and
// without one (ungated, per table: shadow-mode tables only). Read as the
// gate's owner.
func Coverage(ctx context.Context, q DBTX) (gate.Coverage, error) {
	c := gate.Coverage{Tables: []gate.ProtectedTable{}}
	var gated int64
	var tables []byte
	err := q.QueryRowContext(ctx, `SELECT (SELECT coalesce(sum(gated_writes), 0) FROM fencegate.resources),
  (SELECT coalesce(jsonb_agg(jsonb_build_object('table', table_name::text, 'mode', mode, 'resource', resource_expr, 'ungated', ungated)
    ORDER BY table_name::text), '[]') FROM fencegate.protected)`).Scan(&gated, &tables)
	if err == nil {
		err = json.Unmarshal(tables, &c.Tables)
	}
	if err != nil {
		return c, fmt.Errorf("pggate: coverage: %w", err)
	}
	c.Gated = uint64(gated)
	for _, t := range c.Tables {
		c.Ungated += t.Ungated
	}
	return c, nil
}

// GatedWrites returns how many protected rows were written under an
// accept of resource (0 for a resource the gate never saw). Read as the
// gate's owner.
func GatedWrites(ctx context.Context, q DBTX, resource string) (uint64, error) {
	var n int64
	err := q.QueryRowContext(ctx, `SELECT coalesce((SELECT gated_writes FROM fencegate.resources WHERE resource = $1), 0)`, resource).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("pggate: gated writes: %w", err)
	}
	return uint64(n), nil
}

func operatorError(what string, err error, sentinel error) error {
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe) && pe.Code == StateRefused:
		if sentinel == gate.ErrModeDowngrade && !strings.Contains(pe.Message, "downgrade") {
			sentinel = ErrRefused
		}
		return fmt.Errorf("pggate: %s: %w: %s", what, sentinel, pe.Message)
	}
	return fmt.Errorf("pggate: %s: %w", what, err)
}

// Key is one HMAC-SHA256 key of the gate's trust bundle.
type Key struct {
	ID       string
	Secret   []byte // at least grant.SecretBytes
	MinEpoch uint64 // >= 1
	MaxEpoch uint64 // 0: no upper bound
	State    grant.KeyState
}

// ErrKeyReused is wrapped by a key the database refuses because it has
// seen its ID before (schema version 5): with another secret, dropped,
// or in a later state. The message carries the registry's key history
// code (KEY_OTHER_SECRET, KEY_DROPPED, KEY_STATE_BACK).
var ErrKeyReused = errors.New("pggate: key refused: a key ID is used once, forever")

// SetKey enrolls or changes one key (rotation: the new key active, the
// old one verify-only, then retired). Only the gate's owner may. A key ID
// the database has enrolled before comes back only with the same secret
// and a state no earlier than it reached, and never once its row was
// removed: otherwise SetKey wraps ErrKeyReused and nothing changes.
func SetKey(ctx context.Context, q DBTX, k Key) error {
	if err := grant.ValidateKeyID(k.ID); err != nil {
		return fmt.Errorf("pggate: key ID %q: %w", k.ID, err)
	}
	if len(k.Secret) < grant.SecretBytes || k.MinEpoch < 1 || k.MinEpoch > gate.CounterMax || k.MaxEpoch > gate.CounterMax {
		return fmt.Errorf("pggate: key %s: secret of %d bytes (want >= %d), epochs %d..%d", k.ID, len(k.Secret), grant.SecretBytes, k.MinEpoch, k.MaxEpoch)
	}
	_, err := q.ExecContext(ctx, `SELECT fencegate.set_key($1, $2, $3, $4, $5)`, k.ID, k.Secret, int64(k.MinEpoch), int64(k.MaxEpoch), string(k.State))
	return operatorError("set key "+k.ID, err, ErrKeyReused)
}

// KeyUse is one key ID in the database's key history.
type KeyUse struct {
	ID     string
	Digest string         // grant.SigningKey.SecretDigest of its secret
	State  grant.KeyState // active, verify-only, retired, or "dropped"
}

// KeyHistory lists every key ID the gate has enrolled, in ID order
// (schema version 5; the gate's owner only).
func KeyHistory(ctx context.Context, q *sql.DB) ([]KeyUse, error) {
	rows, err := q.QueryContext(ctx, `SELECT key_id, secret_digest, state FROM fencegate.key_history ORDER BY key_id`)
	if err != nil {
		return nil, fmt.Errorf("pggate: key history: %w", err)
	}
	defer rows.Close()
	var out []KeyUse
	for rows.Next() {
		var k KeyUse
		if err := rows.Scan(&k.ID, &k.Digest, &k.State); err != nil {
			return nil, fmt.Errorf("pggate: key history: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pggate: key history: %w", err)
	}
	return out, nil
}

// SetRevokedBelow revokes every issuer epoch below epoch (it only rises).
func SetRevokedBelow(ctx context.Context, q DBTX, epoch uint64) error {
	if _, err := q.ExecContext(ctx, `SELECT fencegate.set_revoked_below($1)`, int64(min(epoch, gate.CounterMax))); err != nil {
		return fmt.Errorf("pggate: revoke below %d: %w", epoch, err)
	}
	return nil
}

// SetSkew sets the status skew bound (gate.Policy.StatusSkewMax).
func SetSkew(ctx context.Context, q DBTX, skew time.Duration) error {
	if _, err := q.ExecContext(ctx, `UPDATE fencegate.settings SET status_skew_ms = $1`, skew.Milliseconds()); err != nil {
		return fmt.Errorf("pggate: skew: %w", err)
	}
	return nil
}

// SetDefaultMode sets the mode a resource the gate never saw starts in.
func SetDefaultMode(ctx context.Context, q DBTX, mode gate.Mode) error {
	if _, err := q.ExecContext(ctx, `UPDATE fencegate.settings SET default_mode = $1`, string(mode)); err != nil {
		return fmt.Errorf("pggate: default mode: %w", err)
	}
	return nil
}

// MapCaller makes the database login role the workload identity a
// grant's owner names.
func MapCaller(ctx context.Context, q DBTX, role, identity string) error {
	if _, err := q.ExecContext(ctx, `SELECT fencegate.map_caller($1, $2)`, role, identity); err != nil {
		return fmt.Errorf("pggate: map caller %s: %w", role, err)
	}
	return nil
}

// SetClock sets the gate's clock to now (tests and the simulator); the
// zero time gives it back to the database server.
func SetClock(ctx context.Context, q DBTX, now time.Time) error {
	var ms *int64
	if !now.IsZero() {
		v := now.UnixMilli()
		ms = &v
	}
	if _, err := q.ExecContext(ctx, `SELECT fencegate.set_clock($1)`, ms); err != nil {
		return fmt.Errorf("pggate: clock: %w", err)
	}
	return nil
}

// Records counts a resource's non-receipt rows: its alarm kinds in order,
// quarantine entries and shadow-log entries.
func Records(ctx context.Context, q DBTX, resource string) (alarms []gate.AlarmKind, quarantined, shadow int, err error) {
	var kinds string
	err = q.QueryRowContext(ctx, `SELECT coalesce((SELECT string_agg(kind, ',' ORDER BY id) FROM fencegate.alarms WHERE resource = $1), ''),
  (SELECT count(*) FROM fencegate.quarantine WHERE resource = $1), (SELECT count(*) FROM fencegate.shadow_log WHERE resource = $1)`,
		resource).Scan(&kinds, &quarantined, &shadow)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("pggate: records: %w", err)
	}
	for _, k := range strings.Split(kinds, ",") {
		if k != "" {
			alarms = append(alarms, gate.AlarmKind(k))
		}
	}
	return alarms, quarantined, shadow, nil
}

// Upstream is the gate's receipts as a job's upstream
// (gate.UpstreamReceipts), read by the gate's owner.
type Upstream struct{ Q DBTX }

// ReceiptAt returns the receipt for (resource, fence, seq), or nil.
func (u Upstream) ReceiptAt(ctx context.Context, resource string, fence, seq uint64) (*gate.Receipt, error) {
	if fence > gate.CounterMax || seq > gate.CounterMax {
		return nil, nil
	}
	var b string
	err := u.Q.QueryRowContext(ctx, `SELECT fencegate.receipt_json(r)::text FROM fencegate.receipts r WHERE r.resource = $1 AND r.fence = $2 AND r.seq = $3`,
		resource, int64(fence), int64(seq)).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pggate: receipt at: %w", err)
	}
	rc, err := gate.DecodeReceipt([]byte(b))
	if err != nil {
		return nil, fmt.Errorf("pggate: receipt at: %w", err)
	}
	return &rc, nil
}

// KeyOf is the Key for an HMAC signing key (grant.AlgHMACSHA256), as a
// trust bundle would list it.
func KeyOf(sk *grant.SigningKey, minEpoch, maxEpoch uint64, state grant.KeyState) (Key, error) {
	if sk.Alg != grant.AlgHMACSHA256 {
		return Key{}, fmt.Errorf("pggate: key %s is %s: PostgreSQL checks only hmac-sha256 proofs", sk.KeyID, sk.Alg)
	}
	var f struct{ Secret string }
	if err := json.Unmarshal(sk.MarshalKeyFile(), &f); err != nil {
		return Key{}, fmt.Errorf("pggate: key %s: %w", sk.KeyID, err)
	}
	secret, err := base64.RawURLEncoding.DecodeString(f.Secret)
	if err != nil {
		return Key{}, fmt.Errorf("pggate: key %s: %w", sk.KeyID, err)
	}
	return Key{ID: sk.KeyID, Secret: secret, MinEpoch: minEpoch, MaxEpoch: maxEpoch, State: state}, nil
}
