// Package freeport picks loopback TCP ports for servers that must be
// told their port before they start: a redis-server, a role of a pool that
// keeps its port across restarts.
//
// A port is only known free at the moment it is checked; the caller's
// server binds it later, and should pick again if the bind fails. Ports
// are picked at random in [Low, High), below Linux's default ephemeral
// range (32768-60999), so that the local port of an outgoing connection
// (and a busy test machine has thousands, many in TIME_WAIT) cannot take
// one between the check and the bind. Only another picker can.
package freeport
