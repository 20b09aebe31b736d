// Package redisstore is the Redis backend, for many rushgate instances sharing one line: [New] opens
// it as one [Backend] that hands out the room, auction and drop stores and the secrets vault, all over
// one client. Every operation is one Lua script (embedded from lua/), run with EVALSHA and re-sent with
// EVAL when Redis has lost it (SCRIPT FLUSH, restart, failover). Scripts take time from the server's
// TIME, so instances with skewed clocks still agree; all keys of a room share one hash tag, so the same
// code serves standalone Redis and Redis Cluster. The requests a crowd sends (joins and status reads,
// claims, bids) are batched: concurrent ones on one entity share one call of its script (batch.go).
//
// The client is rueidis, chosen on measurement over go-redis v9: its automatic pipelining merges the
// script calls of concurrent HTTP handlers into shared writes, and a join is mostly its round trips to
// Redis (write syscalls were a third of a join's CPU with go-redis). BenchmarkClients measures the
// two on the join script; docs/benchmarks.md has the figures.
package redisstore
