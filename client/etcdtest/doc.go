// Package etcdtest runs the client's end-to-end scenarios against a real
// registry on embedded etcd. It holds only tests: it is a package of its
// own so that the client package's tests never link an etcd server.
package etcdtest
