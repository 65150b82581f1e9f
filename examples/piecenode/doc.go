// Package piecenode is the piece sampler role of an indexkit pool as a
// library: a [Sampler] walks providers' advertisement chains, keeps a
// sample of payload CIDs per Filecoin piece and serves signed samples
// (see package piece). It parses no flags, installs no signal handler
// and registers nothing globally; the examples/piece program around it
// (examples/internal/cmd/piececmd, whose documentation is the manual of
// every flag, the state it keeps and the logs) maps its flags onto
// [Config].
//
// # Embedding
//
// A program or a test builds a sampler from a typed [Config] and the
// listener it binds itself, then runs it:
//
//	ln, _ := net.Listen("tcp", "127.0.0.1:0")
//	cfg := piecenode.DefaultConfig()
//	cfg.ProvidersURL = frontEnd + "/providers" // or "" and cfg.Publishers
//	cfg.AllowPrivateAddrs = true                // publishers on loopback
//	sampler, err := piecenode.New(ctx, cfg, piecenode.Listeners{API: ln})
//	if err != nil { ... }
//	defer sampler.Close()
//	go sampler.Run(ctx) // until ctx is done
//	url := sampler.Addrs().APIURL() // GET /sample/{provider}/{piece}?seed=...
//
// By default the pieces and the walk positions are in memory and the
// signing key is fresh; [Config.Store] and [Config.WalkState] take a
// lasting store (piece/redis, which keeps the walk positions too, shared
// by every sampler on it) with its walker state, [Config.Key] a lasting
// key. New refuses the combinations that would lose or skip pieces
// ([Config.Validate]). With [Config.AllowPrivateAddrs] the sampler dials
// publishers on private addresses; it does not log so, its program does.
// [Config.EntryChunks] says how many entry chunks of each advertisement
// are read (the first, by default).
//
// # Lifecycle
//
// [New] validates the Config (every error names the field) and builds the
// walker and the API; it starts no goroutine. [Sampler.Run] serves and
// walks until its context is done, then shuts down within
// Config.ShutdownTimeout, records the walks' positions, and returns only
// after every goroutine it started has exited. [Sampler.Close] releases
// the walker, the in-memory store, and the listener if Run never ran.
// Several samplers may run in one process.
//
// The program parses the flags, opens the store and key they name, binds
// the listener with the connection caps and logs it as msg=listening
// name=api addr=<host:port> after msg=starting; examples/piece and the
// process mode of examples/localpool run it.
package piecenode
