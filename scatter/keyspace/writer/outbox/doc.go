// Package outbox is the durable outbox of an ingest node in the
// keyspace-sharded layer (package keyspace): one queue per destination (a
// query node's name) on the node's disk, which the writer appends
// batches to and a delivery loop per destination drains. The walker's
// checkpoint advances only once [Outbox.Sync] has made the batches
// durable; delivery retries until a batch is acknowledged
// ([Outbox.Ack]); a restart reopens the queues where they were.
//
// # Model
//
// A queue is an ordered log of records ([Record]) with a stream id of its
// own: a random non-zero number drawn when the queue is created and kept
// in its directory. [Outbox.Append] gives each record the next Seq of its
// queue: 1, 2, 3, … never reused within the stream, not after
// acknowledgements, not across restarts. The stream and the Seq name a
// record for the receivers, which apply each stream's records once, in
// Seq order, and drop one they have already applied. The delivery loop
// waits for records ([Outbox.Wait]), takes a bounded batch of those after
// the last acknowledged one ([Outbox.Peek], each record stamped with its
// stream), sends it, and acknowledges through the last one the receiver
// took in that stream ([Outbox.AckStream]). [Outbox.Status] is what
// keyspace.OutboxStatus reports, with the queue's stream; [Outbox.Dests]
// lists the queues, so that a restarted node resumes delivery to every
// destination, including those no longer in its layout, until it removes
// them.
//
// [Outbox.Remove] deletes a queue, stream and all (a query node left the
// layout). An Append to that destination later (it came back under the
// same name) creates a new queue, with a new stream whose Seqs start at 1
// again: a receiver with a fresh store takes it from its start, one that
// knew the old stream sees a new one, and no Seq is reused within a
// stream. An acknowledgement in flight for the removed stream does
// nothing to the new one (AckStream compares the stream).
//
// Queues made by an outbox of before queues had streams of their own
// have no stream file: they go on in the outbox's stream ([Outbox.Stream]),
// and one that such an outbox removed (which kept its last Seq) is
// deleted at Open, so that an Append to it starts a new stream.
//
// # Files
//
// In the outbox directory:
//
//	stream                 the outbox's stream id (8 bytes and a CRC), written once
//	lock                   flock'ed while the outbox is open
//	q-<hex of the name>/   one directory per destination
//	    stream             the queue's stream id, as above, written once
//	    <first seq>.seg    segment files, named by their first Seq (20 digits)
//	    ack                the last acknowledged Seq written, in two slots
//	*.tmp                  a queue directory being created or removed, a
//	                       file being replaced: Open deletes them
//
// A queue directory is built under a temporary name, its stream file
// synced, and renamed into place, so no queue is ever seen without its
// stream; Remove renames it out of the way and syncs the outbox
// directory before it deletes it.
//
// A segment is a 20-byte header (magic, first Seq, CRC) followed by
// records, each a 28-byte header (a crc32c of the header, the payload
// length, Seq, epoch, a crc32c of the payload) and the payload. Appends
// go to the last segment; when a record would take it past the segment
// size ([WithSegmentSize], [DefaultSegmentSize] by default), the segment
// is fsynced and a new one started, so only the last segment can ever
// have an incomplete tail. A segment is deleted once every record in it
// is acknowledged and that acknowledgement is written: a sealed segment
// at once, the last one once it holds a sixteenth of the segment size
// (so that a queue that keeps up does not create a file per batch), or
// at Open or Remove.
//
// Records live only in the files: memory per queue is a few words per
// segment plus an index mark per MiB of records (for locating a Seq
// without reading the segment from its start), not per record. Peek
// reads from the files (the page cache, for a queue that keeps up).
//
// # Durability
//
// Append writes the record to the operating system before it returns,
// so a killed process (SIGKILL, a panic) loses nothing appended; a power
// loss or kernel crash loses what was appended since the last Sync.
// After [Outbox.Sync] returns, every record appended and every Ack made
// before it was called survives both: Sync fsyncs each segment written
// since the last Sync, the directories in which files were created, and
// the ack files. [Outbox.Close] syncs too.
//
// Open reads every segment and checks every record. A last segment that
// ends in a record cut short (fewer bytes than a header, a header whose
// length runs past the end of the file, a last record whose payload CRC
// fails, or bytes that are all zero) is a torn tail, what a kill or power
// loss in the middle of a write leaves: Open truncates it, logs it, and
// appends continue from the last whole record. A record that does not
// decode anywhere else, a segment header that does not, Seqs that do not
// follow on, or a segment missing between others or after the
// acknowledged Seq, is an error wrapping [ErrCorrupt] that names the file
// and offset; Open does not guess.
//
// # Acknowledgements
//
// Ack moves the acknowledged Seq in memory; it is written (and fsynced)
// at the next Sync or Close, or at once when it frees a segment, which is
// then deleted (a segment is never deleted before the ack that frees it
// is written, so the Seqs stay known). After a crash, the records
// acknowledged since the ack was last written are delivered again, which
// receivers drop by Seq; a record at or below a written ack never comes
// back. The ack file has two slots written in turn, so a torn write
// leaves the previous value. When every segment is gone, the ack file
// holds the last Seq, so Seqs go on from it.
//
// # Concurrency
//
// An Outbox is safe for concurrent use. Appends to one destination are
// serialized (each holds the queue while it writes); appends to
// different ones run in parallel. Sync does not hold a queue while it
// fsyncs, so appends continue beside it; concurrent Syncs of a queue run
// one after the other. Peek holds its queue while it reads, so it is
// meant for the one delivery loop of a destination. Wait returns when
// the head passes the given Seq, when its context ends, or with
// [ErrClosed] when the outbox closes. The Outbox starts no goroutine.
//
// # Lifecycle and errors
//
// [Open] checks its options ([ErrInvalidOption]), takes the directory's
// lock ([ErrLocked] if another Outbox holds it) and reads every queue; [Outbox.Close] syncs, closes the files and
// releases the lock, and is idempotent; every method afterwards returns
// [ErrClosed]. An Append that races a Remove of its destination goes to
// the next queue. Destination names are 1 to [MaxDestLen] bytes, any bytes
// ([ErrInvalidDest]); payloads at most [MaxPayload] bytes
// ([ErrTooLarge]); an Ack past the head wraps [ErrAckAhead]. I/O errors
// are wrapped with the operation and file.
package outbox
