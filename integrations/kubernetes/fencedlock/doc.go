// Package fencedlock is fenced leader election for Kubernetes
// controllers: client-go's resourcelock.Interface (and so
// controller-runtime's LeaderElectionResourceLockInterface) over a
// fencegate election. The registry decides who leads, one grant at a
// time, and every term carries a fence that only rises; the leader writes
// to its database through a gate (client.Apply with sqlgate), which
// refuses a deposed leader's write — paused past its lease, partitioned
// away, still believing it leads — once its successor has written
// (STALE_OWNER). A Kubernetes Lease alone cannot refuse that write.
//
// client-go's elector keeps its own timing: it renews every RetryPeriod
// and gives up RenewDeadline after a renewal first fails. The lock maps
// it onto the lease: the lease's TTL is LeaseDuration, the SDK renews it
// in the background, and the lock answers a renewal with an error from
// the lease's local deadline − (RenewDeadline + RetryPeriod + StopSlack)
// on, so OnStoppedLeading comes no later than the local deadline, after
// which the SDK refuses to build envelopes anyway. Config.Check says
// which values work.
//
//	w, err := httpclient.Connect(ctx, registryURL, httpclient.WithBearerToken(token))
//	lock, err := fencedlock.New(w.Session, fencedlock.Config{Resource: "election/my-controller",
//		Identity: podName, LeaseDuration: 15 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: time.Second})
//	leaderelection.RunOrDie(ctx, lock.ElectionConfig(leaderelection.LeaderCallbacks{
//		OnStartedLeading: func(ctx context.Context) {
//			lease, _ := fencedlock.LeaseFrom(ctx)
//			_, err := client.Apply(ctx, lease, db, payload, write) // STALE_OWNER once deposed
//		},
//		OnStoppedLeading: func() { os.Exit(0) },
//	}))
//
// With controller-runtime give the lock as
// manager.Options.LeaderElectionResourceLockInterface with the same three
// timings, and read the term with Lock.Lease in the reconciler.
package fencedlock
