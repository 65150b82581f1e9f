// Package logsample keeps a flood of like events out of the log. A
// [Sampler] lets through, for each kind of event, the first one of every
// interval and counts the others; the next event let through carries the
// count of those held back, so the log says how many there were without
// one line each. It is meant for events an attacker can cause at will
// (announces of unknown publishers, refused requests), whose every
// occurrence is counted in metrics anyway.
//
// Kinds are short constant strings chosen by the caller, so the table of
// kinds is as small as the code that uses it.
//
// It imports the standard library only.
package logsample
