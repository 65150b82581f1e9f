package freeze

// DiskReader reads the disk usage of the filesystem that holds a directory.
// used and total are in bytes; used/total is the fraction the [Monitor]
// reports. Implementations must be safe for concurrent use.
//
// [StatfsReader] is the default. Tests inject a fake to drive usage without
// filling a disk.
type DiskReader interface {
	Usage(dir string) (used, total uint64, err error)
}

// DeviceReader is an optional capability of a [DiskReader]: the ID of the
// device (filesystem) that holds dir. The [Monitor] reads the usage of each
// device once per check, through the first of its directories on it. A
// reader without it gets the device from os.Stat (st_dev), so a fake reader
// given directories that do not exist should implement it.
type DeviceReader interface {
	Device(dir string) (uint64, error)
}

// StatfsReader is the default [DiskReader] and [DeviceReader]: statfs(2)
// and stat(2). Like df, it counts the blocks reserved for root as
// unavailable:
//
//	used  = (blocks − free blocks) × block size
//	total = used + blocks available to unprivileged users × block size
//
// so 100% means an unprivileged process can write nothing more. It is
// available on Linux, macOS and FreeBSD; elsewhere it wraps
// errors.ErrUnsupported.
type StatfsReader struct{}
