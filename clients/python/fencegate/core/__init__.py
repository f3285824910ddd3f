"""The pure cores of the Python client, as client/core is the Go SDK's:
the lease state machine (machine), its timing (schedule), its limits
(limits), one lease's core (lease.LeaseCore), one acquire's
(acquire.AcquireCore) and one downgrade's (downgrade.DowngradeCore). No
clock, no I/O, no thread, no lock: every step takes the client's now in
integer nanoseconds. The shells in the parent package drive them with
real time and HTTP; tests/test_lease_scenarios.py drives them with the Go
SDK's scenario files (client/testdata/lease) and expects the same answer at every step.
"""
