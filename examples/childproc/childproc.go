// Package childproc holds the one platform-specific detail of `fencegate
// demo`'s process management: children that die with their parent. It is
// not part of the ledger example.
package childproc
