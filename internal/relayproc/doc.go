// Package relayproc runs the cdc-relay binary as a child process for the
// end-to-end tests and the benchmarks: it starts the process, stops it with
// SIGTERM or kills it, keeps its output, and reads its CPU time and peak
// resident memory (and any other process's CPU time) from /proc, so Linux
// only.
package relayproc
