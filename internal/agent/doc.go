// Package agent is the in-cluster side of cnibench, run inside the tools image as
// `cnibench agent ...`: an echo server and request/response clients (RR over one connection,
// CRR with a new connection per transaction, for which no packaged tool exists), and a probe
// that reports the node's CPU and memory counters. What its commands print is typed in
// internal/agentcmd, beside their argv, so that the callers decode it without compiling this
// package.
package agent
