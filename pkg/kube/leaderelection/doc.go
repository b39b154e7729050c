// Package leaderelection elects one replica among several over a
// coordination.k8s.io Lease, as client-go's leaderelection package does
// with a LeaseLock (whose generated clients the binaries do not link): it
// goes through pkg/kube/kclient, and its clock and jitter are injected, so
// tests step a fake clock instead of waiting on real time.
//
//   - A candidate tries every RetryPeriod (jittered). It acquires the
//     Lease when it does not exist, names no holder, names this replica,
//     or has not changed for the holder's leaseDurationSeconds as observed
//     on this replica's clock: a record's times are never compared with
//     the local clock, so skew between replicas does not matter.
//   - Every write carries the resourceVersion read (or last written): a
//     conflict means someone else wrote first, and the try failed.
//   - The leader renews every RetryPeriod and stops leading when no
//     renewal succeeded for RenewDeadline, well before a candidate may
//     take over (LeaseDuration after it last saw the Lease change).
//   - Stopping clears the holder (leaseDurationSeconds 1), so another
//     replica takes over at once.
//
// The status writers (pilot/pkg/config/kube/status) campaign with it, so
// only one replica writes status and runs the gateway deployer.
package leaderelection
