#!/usr/bin/env bash
# Exhaustive check of the fencegate Promela model (model/README.md): the
# safe model must verify with no error and a complete search, each mutant
# must yield a counterexample of the property it breaks, and each
# non-vacuity target must be reached. Exit 0 only if all of that holds.
#
# Three models: fencegate.pml (one lock: registry, gate, clients),
# lockset.pml (all-or-nothing lock sets) and rwlock.pml (read/write
# locks), each with its own configurations and mutants.
#
# Usage: model/check.sh            base, querier, three, range and
#                                  rangenet configurations and the mutants;
#                                  lock sets (two sets, cycle, big) and
#                                  read/write locks (one writer, two
#                                  writers, longer leases) and their
#                                  mutants (about 4 minutes here)
#        model/check.sh --quick    the base and range configurations and
#                                  the mutants; lock sets (two sets,
#                                  cycle), read/write locks (one writer,
#                                  two writers) and every mutant of both
#                                  (CI, about 65 s)
#        model/check.sh --full     the default, then four larger
#                                  configurations of fencegate.pml and
#                                  one of rwlock.pml (about 15 more
#                                  minutes and 7.5 GB of memory for one
#                                  of them)
# MODEL_MEMLIM_MB (default 6000) caps the memory of one search.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-default}
case $mode in default | --quick | --full) ;; *)
  echo "usage: $0 [--quick | --full]" >&2
  exit 2
  ;;
esac
command -v spin >/dev/null || { echo "check.sh: spin not found (Debian package spin)" >&2; exit 2; }
command -v cc >/dev/null || { echo "check.sh: no C compiler" >&2; exit 2; }

memlim=${MODEL_MEMLIM_MB:-6000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here"/*.pml "$work"/
cd "$work"
failures=0

# Bounds of each configuration, beyond the defaults of params.pml
# (G=2 FAULTS=2 TMAX=3 TTL=3 PTTL=2 LD=1 M=1 NET=2 SEQMAX=1 RNMAX=1 RQMAX=1),
# and the non-vacuity targets (REACH in the model) its search must reach.
BASE=""                                 # two grants, two faults, four ticks
BASE_COVERS="1 2 3 4 5 6 8 9 11 12 13"
QUERIER="-DQUERIER"                     # the same, the gate with a StatusQuerier
QUERIER_COVERS="10"
THREE="-DG=3 -DFAULTS=1 -DTMAX=1"       # three grants: an accept after a restore and a resume
THREE_COVERS="7"
# fence ranges (issue 28): bumps, a restore that may take the generation
# back; two clients, one fault, two ticks, one write in flight
RANGE="-DRANGE -DNC=2 -DFAULTS=1 -DTMAX=1 -DNET=1"
RANGE_COVERS="1 2 14 15 16 17 18"
RANGENET="-DRANGE -DNC=2 -DFAULTS=1 -DTMAX=1"   # the same with two writes in flight
RANGE3="-DRANGE -DFAULTS=1 -DTMAX=1"           # --full: the same with three clients
REACQUIRE="-DRQMAX=2"                   # --full: two request IDs per client (re-acquire)
SEGMENTS="-DSEQMAX=2"                   # --full: two segments per grant
SHORTTTL="-DTTLS=1"                     # --full: clients may also ask for TTL 1
hashbits=24
safes="base querier three range rangenet"
if [ "$mode" = --quick ]; then
  safes="base range"
elif [ "$mode" = --full ]; then
  hashbits=26
  memlim=${MODEL_MEMLIM_MB:-9000}       # segments needs 7.5 GB
  safes="base querier three range rangenet reacquire segments shortttl range3"
fi

# build NAME FLAGS...: a pan for the model $TOP (default fencegate.pml)
# with these -D flags, in dir NAME
build() {
  local name=$1 how=""
  shift
  [ -n "${BFS:-}" ] && how=-DBFS
  mkdir -p "$name"
  (cd "$name" && cp ../*.pml . && spin -a "$@" "${TOP:-fencegate.pml}" >/dev/null &&
    cc ${OPT:--O2} -w -DMEMLIM="$memlim" -DVECTORSZ=1024 ${CCFLAGS:-} $how -o pan pan.c)
}

# search NAME: run NAME's pan ($PAN: extra options, e.g. -a -f for the
# liveness properties; $DEPTH: the search depth, default 100000)
search() {
  (cd "$1" && ./pan -m"${DEPTH:-100000}" -w"${W:-$hashbits}" ${PAN:-} >out.txt 2>&1) || true
}

# stats NAME: one line of figures from NAME/out.txt
stats() {
  local o=$1/out.txt
  printf '%s states, %s transitions, depth %s, %s s, %s MB' \
    "$(awk '/states, stored/ {print $1; exit}' "$o")" \
    "$(awk '/transitions \(= stored\+matched\)/ {print $1; exit}' "$o")" \
    "$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$o" | head -1)" \
    "$(sed -n 's/^pan: elapsed time \([0-9.e+]*\).*/\1/p' "$o" | head -1)" \
    "$(awk '/total actual memory usage/ {print $1; exit}' "$o")"
}

# safe NAME COVERS FLAGS...: must finish with 0 errors and a complete
# search, and reach every non-vacuity target in COVERS
safe() {
  local name=$1 covers=$2 k missed=""
  shift 2
  build "$name" "$@"
  search "$name"
  for k in $covers; do grep -qx "cover $k reached" "$name/out.txt" || missed="$missed $k"; done
  if grep -q 'errors: 0' "$name/out.txt" && ! grep -qE 'Search not completed|max search depth too small|MEMLIM' "$name/out.txt" &&
    [ -z "$missed" ]; then
    echo "PASS  safe $name [$*]: $(stats "$name"); reached targets $(grep -c '^cover [0-9]* reached$' "$name/out.txt"): $(sed -n 's/^cover \([0-9]*\) reached$/\1/p' "$name/out.txt" | sort -n | tr '\n' ' ')"
  elif [ -n "$missed" ] && grep -q 'errors: 0' "$name/out.txt"; then
    echo "FAIL  safe $name [$*]: non-vacuity targets not reached:$missed"
    failures=$((failures + 1))
  else
    echo "FAIL  safe $name [$*]: $(grep -m1 -E 'assertion violated|Search not completed|MEMLIM|error' "$name/out.txt" || echo 'no result')"
    [ -f "$name/fencegate.pml.trail" ] && trail "$name" "$@"
    failures=$((failures + 1))
  fi
}

# trail NAME FLAGS...: the event log of NAME's counterexample
trail() {
  local name=$1
  shift
  (cd "$name" && spin -t "$@" "${TOP:-fencegate.pml}" 2>&1) |
    tr -s ' ' | sed -n 's/^[[:space:]]*\(T[0-9].*\|--- T = .*\|ev .*\|<<<<<START OF CYCLE>>>>>\)$/      \1/p; s/^spin: text of failed assertion: \(.*\)/      violated: \1/p'
}

# violated NAME PATTERN WHAT FLAGS...: the search must stop on an
# assertion matching PATTERN (a mutant's property, or a cover target
# reached); WHAT says which in the PASS line
violated() {
  local name=$1 pattern=$2 what=$3
  shift 3
  build "$name" "$@"
  search "$name"
  local re="assertion violated.*$pattern"
  [ "${pattern#@}" != "$pattern" ] && re=${pattern#@}   # @REGEX: a line of its own (a deadlock, an acceptance cycle)
  if grep -qE "$re" "$name/out.txt"; then
    echo "PASS  $name [$*]: $what ($(stats "$name"))"
    return 0
  fi
  echo "FAIL  $name [$*]: expected a violation of $pattern, got: $(grep -m1 -E 'assertion violated|errors:' "$name/out.txt" || echo 'no result')"
  failures=$((failures + 1))
  return 1
}

echo "--- safe model (complete search, every property, every listed target reached)"
for c in $safes; do
  case $c in
  base) safe base "$BASE_COVERS" $BASE ;;
  querier) safe querier "$QUERIER_COVERS" $QUERIER ;;
  three) safe three "$THREE_COVERS" $THREE ;;
  reacquire) safe reacquire "$BASE_COVERS" $REACQUIRE ;;
  segments) safe segments "$BASE_COVERS" $SEGMENTS ;;
  shortttl) safe shortttl "$BASE_COVERS" $SHORTTTL ;;
  range) safe range "$RANGE_COVERS" $RANGE ;;
  rangenet) safe rangenet "$RANGE_COVERS" $RANGENET ;;
  range3) safe range3 "$RANGE_COVERS" $RANGE3 ;;
  esac
done

echo "--- mutants: each must yield a counterexample (no symmetry reduction, so client numbers in a trail stay put)"
# Each within the smallest bounds that hold its counterexample (a
# counterexample in smaller bounds is one in larger): breadth-first, so
# the trail is a shortest one, where that is cheap.
BFS=1 OPT=-O0
mut="-DNOSYMMETRY -DNOHIDDEN -DNOCOVER"
small="-DFAULTS=0 -DTMAX=0"             # the first two need no fault and no tick
if violated mutant-nofence 'staleAccept' 'counterexample: stale accept' $small -DMUTANT_NOFENCE $mut; then
  trail mutant-nofence $small -DMUTANT_NOFENCE $mut
fi
if violated mutant-oldrule 'spuriousPause' 'counterexample: spurious pause' $small -DMUTANT_OLDRULE $mut; then
  trail mutant-oldrule $small -DMUTANT_OLDRULE $mut
fi
# fence ranges: each breaks what the registry must do after a bump that
# followed the restore (range configuration)
if violated mutant-bumpkeeps 'staleHeldAfterBump' 'counterexample: HELD signed about the old range after the bump' $RANGE -DMUTANT_BUMPKEEPS $mut; then
  trail mutant-bumpkeeps $RANGE -DMUTANT_BUMPKEEPS $mut
fi
if violated mutant-nogenbase 'reissuedAfterBump' 'counterexample: a fence issued again after the bump' $RANGE -DMUTANT_NOGENBASE $mut; then
  trail mutant-nogenbase $RANGE -DMUTANT_NOGENBASE $mut
fi
if violated mutant-noclock 'reissuedAfterBump' 'counterexample: a fence issued again after the bump' $RANGE -DMUTANT_NOCLOCK $mut; then
  trail mutant-noclock $RANGE -DMUTANT_NOCLOCK $mut
fi
# the higher-fence rule at exactly the skew bound (a tick, no fault)
if violated mutant-higheratbound 'spuriousPause' 'counterexample: spurious pause' -DFAULTS=0 -DTMAX=1 -DMUTANT_HIGHER_AT_BOUND $mut; then
  trail mutant-higheratbound -DFAULTS=0 -DTMAX=1 -DMUTANT_HIGHER_AT_BOUND $mut
fi
unset BFS
# deeper counterexamples (a restore, a lost release, a tick): depth-first,
# which stops at the first one
mut="-DNOSYMMETRY -DNOCOVER"
if violated mutant-noalarm 'missedRegression' 'counterexample: regression not alarmed' -DFAULTS=1 -DTMAX=1 -DMUTANT_NOALARM $mut; then
  trail mutant-noalarm -DFAULTS=1 -DTMAX=1 -DMUTANT_NOALARM $mut
fi
if [ "$mode" != --quick ]; then
  # the range mutants again with only the gate's property: what the
  # resource sees is a pause after a restore and a bump. BUMPKEEPS needs
  # the fault (a lost release); the other two do not, and without it the
  # depth-first search meets their counterexample sooner
  for m in BUMPKEEPS NOGENBASE NOCLOCK; do
    n=mutant-$(echo "$m" | tr 'A-Z' 'a-z')-gate
    b=$RANGE
    [ "$m" = BUMPKEEPS ] || b="-DRANGE -DNC=2 -DFAULTS=0 -DTMAX=1 -DNET=1"
    if violated "$n" 'pauseAfterBump' 'counterexample: a pause after a restore and a bump' $b -DMUTANT_$m -DGATEPROPS $mut; then
      trail "$n" $b -DMUTANT_$m -DGATEPROPS $mut
    fi
  done
  # a limit of the design, not a mutant: a bump --above a fence further
  # ahead of the clock than a bump waits out, a restore from before it,
  # then a bump without --above: the clock term is not above the lost
  # generation, and fences are issued below ones already issued
  BFS=1 OPT=-O0
  if violated limit-ahead 'reissuedAfterBump' 'counterexample (a stated limit): a bump ahead of the clock, lost by a restore' $RANGE -DEXP_AHEAD -DNOSYMMETRY -DNOHIDDEN -DNOCOVER; then
    trail limit-ahead $RANGE -DEXP_AHEAD -DNOSYMMETRY -DNOHIDDEN -DNOCOVER
  fi
  unset BFS
fi

# mutant NAME PATTERN WHAT FLAGS...: violated, then the trail (of an
# acceptance cycle, the cycle only: the way into it can be long)
mutant() {
  local name=$1 pattern=$2 what=$3
  shift 3
  if violated "$name" "$pattern" "$what" "$@"; then
    case $pattern in
    *cycle*) trail "$name" "$@" | sed -n '/START OF CYCLE/,$p' | head -40 || true ;;   # head may close the pipe early
    *) trail "$name" "$@" ;;
    esac
  fi
}

# --- issue 46: lock sets and read/write locks, each its own model
# (model/README.md "Lock sets", "Read/write locks"). Their clients loop
# forever, so a complete search covers every run of any length; the
# liveness property (no starvation) is checked under weak fairness.
echo "--- lock sets (lockset.pml): no partial hold, no waiter holding, no deadlock, no starvation"
# small state spaces: -O0 builds in a fifth of the time -O2 takes, and
# the searches take a second or two either way; five processes under
# weak fairness need NFAIR=3
export TOP=lockset.pml DEPTH=1000000 W=20 OPT=-O0 CCFLAGS=-DNFAIR=3
LIVE="-a -f"
safe lockset "1 2 3 4 5 6"
PAN=$LIVE safe lockset-live "" -DLIVE
safe lockset-cycle "1 2 3 4 5 6" -DCYCLE
PAN=$LIVE safe lockset-cycle-live "" -DCYCLE -DLIVE
if [ "$mode" != --quick ]; then
  safe lockset-big "1 2 3 4 5 6" -DBIG -DCANCELS=2
  PAN=$LIVE safe lockset-big-live "" -DBIG -DCANCELS=2 -DLIVE
fi
BFS=1
mut="-DNOHIDDEN -DNOCOVER"
mutant ls-partial 'waiterHolds' 'counterexample: a waiter holds a member' -DMUTANT_PARTIAL $mut
mutant ls-partial-deadlock '@invalid end state' 'counterexample: deadlock' -DMUTANT_PARTIAL -DNOASSERT $mut
mutant ls-splitenq '@invalid end state' 'counterexample: deadlock, nothing held' -DMUTANT_SPLITENQ $mut
mutant ls-splitexpire 'partialHold' 'counterexample: a partial hold' -DMUTANT_SPLITEXPIRE $mut
mutant ls-nocancelhandoff '@invalid end state' 'counterexample: deadlock after a cancel' -DMUTANT_NOCANCELHANDOFF $mut
unset BFS
PAN=$LIVE mutant ls-barge '@acceptance cycle' 'counterexample: a set starved by single-resource clients' -DMUTANT_BARGE -DLIVE -DNOCOVER

echo "--- read/write locks (rwlock.pml): writer exclusion, writer preference, own leases, downgrade, gate, no starvation"
export TOP=rwlock.pml W=22
safe rwlock "1 2 3 4 6 7"
safe rwlock-twow "1 2 3 4 5 6 7" -DTWOW
PAN=$LIVE safe rwlock-live "" -DLIVE
PAN=$LIVE safe rwlock-twow-live "" -DTWOW -DLIVE
if [ "$mode" != --quick ]; then
  safe rwlock-ttl3 "1 2 3 4 5 6 7" -DTWOW -DTTL=3 -DRNMAX=2
  PAN=$LIVE safe rwlock-ttl3-live "" -DTWOW -DTTL=3 -DRNMAX=2 -DLIVE
fi
if [ "$mode" = --full ]; then
  W=24 safe rwlock-big "1 2 3 4 5 6 7" -DBIG   # 8.2 million states, 0.9 GB
fi
BFS=1
mut="-DNOHIDDEN -DNOCOVER"
mutant rw-writerbeside 'writerNotAlone' 'counterexample: a writer beside a reader' -DMUTANT_WRITERBESIDE $mut
mutant rw-readerpref 'readerPastWriter' 'counterexample: a new reader past a queued writer' -DMUTANT_READERPREF $mut
mutant rw-sharedlease 'outlivesTTL' "counterexample: a crashed reader's share outlives its TTL" -DMUTANT_SHAREDLEASE $mut
mutant rw-downgrade2step 'writerInDowngrade' 'counterexample: a queued writer let in during a downgrade' -DMUTANT_DOWNGRADE2STEP -DTWOW $mut
mutant rw-downgrade2step-fence 'fenceLost' "counterexample: the downgraded holder reads under another writer's fence" -DMUTANT_DOWNGRADE2STEP -DTWOW -DFENCEONLY $mut
mutant rw-gatenomode 'readerMutation' "counterexample: a reader's grant accepted as a mutation" -DMUTANT_GATENOMODE $mut
unset BFS
PAN=$LIVE mutant rw-readerpref-live '@acceptance cycle' 'counterexample: a writer starved by readers' -DMUTANT_READERPREF -DNOASSERT -DLIVE -DNOCOVER
PAN=$LIVE mutant rw-writerjump-live '@acceptance cycle' 'counterexample: a reader starved by writers' -DMUTANT_WRITERJUMP -DTWOW -DLIVE -DNOCOVER
unset TOP DEPTH W OPT CCFLAGS

if [ "$failures" -ne 0 ]; then
  echo "model check: $failures failure(s)"
  exit 1
fi
echo "model check: OK"
