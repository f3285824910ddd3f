-- The gate inside PostgreSQL, the owner's calls: operator actions on a
-- resource (resume, set_mode, set_min_policy_generation, each recorded
-- in operator_actions and refused with FG021), and the gate's settings
-- (keys, revoked epochs, callers, the test clock). No writer may call
-- them (privileges.sql).

-- act records an operator action.
CREATE OR REPLACE FUNCTION fencegate.act(resource TEXT, action TEXT, operator TEXT, detail TEXT) RETURNS VOID LANGUAGE sql AS $fg$
  INSERT INTO fencegate.operator_actions (subject, action, operator, detail, at_ms) VALUES (resource, action, operator, detail, fencegate.now_ms())
$fg$;

-- operated refuses an operator action without the operator's name, and
-- returns the resource's state, locked (lock_state).
CREATE OR REPLACE FUNCTION fencegate.operated(resource TEXT, operator TEXT) RETURNS fencegate.resources LANGUAGE plpgsql AS $fg$
BEGIN
  IF coalesce(operator, '') = '' THEN PERFORM fencegate.refused('operator actions need the operator''s name'); END IF;
  RETURN fencegate.lock_state(resource);
END $fg$;

-- resume is gate.Resume: lift a pause once the registry's fence floor is
-- above highestFence; the floor and the instant are kept.
CREATE OR REPLACE FUNCTION fencegate.resume(resource TEXT, registry_floor BIGINT, operator TEXT, note TEXT) RETURNS VOID LANGUAGE plpgsql AS $fg$
DECLARE
  st fencegate.resources := fencegate.operated(resource, operator);
BEGIN
  IF NOT st.paused THEN PERFORM fencegate.refused(format('gate: resume refused: resource %s is not paused', resource)); END IF;
  IF registry_floor <= st.highest_fence THEN
    PERFORM fencegate.refused(format('gate: resume refused: resource %s: registry floor %s is not above highestFence %s; raise the registry''s fence floor first',
      resource, registry_floor, st.highest_fence));
  END IF;
  UPDATE fencegate.resources r SET paused = FALSE, paused_reason = '', fence_floor = greatest(r.fence_floor, registry_floor),
    floor_at_ms = fencegate.now_ms() WHERE r.resource = resume.resource;
  PERFORM fencegate.act(resource, 'resume', operator, format('resume registry floor %s > highestFence %s; was paused: %s; note: %s',
    registry_floor, st.highest_fence, st.paused_reason, note));
END $fg$;

-- set_mode moves a resource shadow → enforce; enforce is final.
CREATE OR REPLACE FUNCTION fencegate.set_mode(resource TEXT, mode TEXT, operator TEXT) RETURNS VOID LANGUAGE plpgsql AS $fg$
DECLARE
  st fencegate.resources;
BEGIN
  IF coalesce(operator, '') = '' THEN PERFORM fencegate.refused('operator actions need the operator''s name'); END IF;
  IF mode NOT IN ('shadow', 'enforce') THEN PERFORM fencegate.refused(format('gate: mode downgrade refused: mode %L', mode)); END IF;
  -- a resource never seen is created in the mode asked for
  INSERT INTO fencegate.resources (resource, mode) VALUES (set_mode.resource, set_mode.mode) ON CONFLICT DO NOTHING;
  st := fencegate.lock_state(resource);
  IF st.mode = 'enforce' AND mode <> 'enforce' THEN
    PERFORM fencegate.refused(format('gate: mode downgrade refused: enforce is final: %s → %s', st.mode, mode));
  END IF;
  UPDATE fencegate.resources r SET mode = set_mode.mode WHERE r.resource = set_mode.resource;
  PERFORM fencegate.act(resource, 'set-mode', operator, format('set-mode %s → %s', st.mode, mode));
END $fg$;

-- set_min_policy_generation raises the lowest grant policy generation the
-- resource accepts; it only rises.
CREATE OR REPLACE FUNCTION fencegate.set_min_policy_generation(resource TEXT, gen BIGINT, operator TEXT) RETURNS VOID LANGUAGE plpgsql AS $fg$
DECLARE
  st fencegate.resources := fencegate.operated(resource, operator);
BEGIN
  IF gen < st.min_policy_generation THEN
    PERFORM fencegate.refused(format('gate: min policy generation %s: must be between the current %s and 9223372036854775807', gen, st.min_policy_generation));
  END IF;
  UPDATE fencegate.resources r SET min_policy_generation = gen WHERE r.resource = set_min_policy_generation.resource;
  PERFORM fencegate.act(resource, 'set-min-policy-generation', operator, format('set-min-policy-generation %s → %s', st.min_policy_generation, gen));
END $fg$;

-- set_key enrolls or changes one HMAC key of this gate's trust bundle
-- (rotation: add the new key active, move the old one to verify-only,
-- then retired). Its secret never leaves the database again.
CREATE OR REPLACE FUNCTION fencegate.set_key(key_id TEXT, secret BYTEA, min_epoch BIGINT, max_epoch BIGINT, state TEXT) RETURNS VOID LANGUAGE sql AS $fg$
  INSERT INTO fencegate.keys VALUES (key_id, secret, min_epoch, max_epoch, state)
  ON CONFLICT (key_id) DO UPDATE SET secret = excluded.secret, min_epoch = excluded.min_epoch,
    max_epoch = excluded.max_epoch, state = excluded.state
$fg$;

-- set_revoked_below revokes every issuer epoch below epoch; it only rises.
CREATE OR REPLACE FUNCTION fencegate.set_revoked_below(epoch BIGINT) RETURNS VOID LANGUAGE sql AS $fg$
  UPDATE fencegate.settings SET revoked_below_epoch = greatest(revoked_below_epoch, epoch)
$fg$;

-- map_caller makes login role role_name the workload identity identity.
CREATE OR REPLACE FUNCTION fencegate.map_caller(role_name TEXT, identity TEXT) RETURNS VOID LANGUAGE sql AS $fg$
  INSERT INTO fencegate.callers VALUES (role_name, identity)
  ON CONFLICT (role_name) DO UPDATE SET identity = excluded.identity
$fg$;

-- set_clock sets (ms) or clears (NULL) the gate clock: for tests only.
CREATE OR REPLACE FUNCTION fencegate.set_clock(ms BIGINT) RETURNS VOID LANGUAGE sql AS $fg$
  UPDATE fencegate.settings SET clock_ms = ms
$fg$;
