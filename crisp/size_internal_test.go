package crisp

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/policy"
)

// sizeClass returns the size of the allocation Go's allocator makes for
// an object of n bytes, for the small sizes these tests are about: the
// runtime's size classes from 96 to 3072 bytes.
func sizeClass(n uintptr) uintptr {
	for _, c := range []uintptr{96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384,
		416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072} {
		if n <= c {
			return c
		}
	}
	return n
}

// An idle actor costs one allocation of at most 128 bytes (issue 13
// asks for 192): the Actor with a pointer-sized state. This fails when
// a field added to core (or to Actor) moves it into the next size
// class; BenchmarkMemory measures the same thing as live heap. What
// only some actors use is in queues, made when first needed: at most 64
// bytes more.
func TestAnIdleActorFitsIn128Bytes(t *testing.T) {
	assert.LessOrEqual(t, sizeClass(unsafe.Sizeof(Actor[*int]{})), uintptr(128), "Actor[*int] is %d bytes", unsafe.Sizeof(Actor[*int]{}))
	assert.LessOrEqual(t, unsafe.Sizeof(core{}), uintptr(120), "core")
	assert.LessOrEqual(t, unsafe.Sizeof(queues{}), uintptr(64), "queues")
}

// A sender reads an actor's first cache line on every send (flags, the
// lane, the intake), and the runner writes its lock, its queues and its
// arrival count for every message it takes: they must not share a line
// (core's layout). With flags on the lock's line, each send took that
// line from the runner's cache and the runner took it back: counting
// and fork-join as whole processes took about 0.9x the time once they
// were apart (BENCHMARKS.md, twenty-eighth session). An Actor[*T] (128
// bytes, a multiple of 64) is allocated on a line's start.
func TestASendersLineIsNotTheRunners(t *testing.T) {
	var c core
	senders := map[string][2]uintptr{
		"sys": {unsafe.Offsetof(c.sys), unsafe.Sizeof(c.sys)}, "cfg": {unsafe.Offsetof(c.cfg), unsafe.Sizeof(c.cfg)},
		"bound": {unsafe.Offsetof(c.bound), unsafe.Sizeof(c.bound)}, "lane": {unsafe.Offsetof(c.lane), unsafe.Sizeof(c.lane)},
		"intake": {unsafe.Offsetof(c.intake), unsafe.Sizeof(c.intake)}, "flags": {unsafe.Offsetof(c.flags), unsafe.Sizeof(c.flags)},
		// wdKey, read by the senders of deadlines while a handler runs,
		// is on none of the lines the runner writes for every message.
		"wdKey": {unsafe.Offsetof(c.wdKey), unsafe.Sizeof(c.wdKey)},
	}
	for name, f := range senders {
		assert.LessOrEqual(t, f[0]+f[1], uintptr(64), "%s, read by every sender, is past the first line", name)
	}
	runners := map[string]uintptr{
		"mu": unsafe.Offsetof(c.mu), "queued": unsafe.Offsetof(c.queued), "pn": unsafe.Offsetof(c.pn),
		"phead": unsafe.Offsetof(c.phead), "ptail": unsafe.Offsetof(c.ptail), "qs": unsafe.Offsetof(c.qs),
		"seq": unsafe.Offsetof(c.seq),
	}
	for name, off := range runners {
		assert.GreaterOrEqual(t, off, uintptr(64), "%s, the runner's (written under its lock), is on the senders' line", name)
	}
	assert.Zero(t, unsafe.Sizeof(Actor[*int]{})%64, "Actor[*int] is %d bytes: not a whole number of lines", unsafe.Sizeof(Actor[*int]{}))
	assert.Zero(t, unsafe.Offsetof(Actor[*int]{}.core), "core opens the Actor")
}

// A queued Call with a deadline costs one allocation in the 128-byte size
// class, message and future together, plus its slots in the deadline
// index if it arrived out of deadline order (about 21 bytes at 100,000
// queued, rings of 2^17 pointers): at most 200 bytes (issue 13;
// BenchmarkMemory measures it). A message carries no policy.Item unless
// it enters its actor's policy queue or is sent with a priority, a tag or
// a name (message.pi), and its deadline is a key, not a time.Time: a
// Tell is 96 bytes, a Call with its future 128. This fails when a word
// is added to the message or the future.
// A lane costs its actor about 2.3 KB once made (doc.go's costs): the
// lane and one segment, and a spare segment of the same size once a
// flood has filled more than one.
func TestALaneCostsAbout2600Bytes(t *testing.T) {
	l, seg := sizeClass(unsafe.Sizeof(lane{})), sizeClass(unsafe.Sizeof(laneSeg{}))
	assert.LessOrEqual(t, l+seg, uintptr(2600), "lane %d + segment %d bytes", l, seg)
	assert.LessOrEqual(t, l+2*seg, uintptr(4900), "with a spare segment")
	assert.EqualValues(t, 16, unsafe.Sizeof(laneSlot{}), "an entry")
}

func TestAQueuedCallFitsIn128Bytes(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(message{}), uintptr(80), "message: the deadline is a key (int64), not a time.Time")
	assert.LessOrEqual(t, sizeClass(unsafe.Sizeof(call[*int, int]{})), uintptr(128), "call[*int, int] is %d bytes", unsafe.Sizeof(call[*int, int]{}))
	assert.LessOrEqual(t, sizeClass(unsafe.Sizeof(callNext[*int, int]{})), uintptr(128), "callNext[*int, int]")
	assert.LessOrEqual(t, unsafe.Sizeof(future.Future[int]{}), uintptr(24), "Future[int]: the state, one word for the source or the error, the value")
	assert.LessOrEqual(t, unsafe.Sizeof(policy.Item{}), uintptr(96), "policy.Item")
	assert.LessOrEqual(t, sizeClass(unsafe.Sizeof(tell[*int]{})), uintptr(96), "tell[*int]")
	assert.LessOrEqual(t, sizeClass(unsafe.Sizeof(askCall[*int, int]{})), uintptr(144), "askCall[*int, int]: a call, its count and its spare")
}

// The live list is a slice with each actor's index in it: an actor
// leaving from the middle is replaced by the last one, whose index
// follows, and the list keeps exactly the actors that joined and did not
// leave.
func TestTheLiveListKeepsItsIndexesAsActorsLeave(t *testing.T) {
	onOneProcessor(t) // all join shard 0, the processor's
	s := NewSystem()
	defer s.wd.Stop()
	var as [5]core
	for i := range as {
		require.True(t, s.join(&as[i], false))
	}
	sh := &s.shards[0]
	s.leave(&as[1]) // from the middle: as[4] takes its place
	s.leave(&as[4]) // the one that moved
	s.leave(&as[1]) // not in the list any more: nothing changes
	assert.Equal(t, []*core{&as[0], &as[3], &as[2]}, sh.live)
	for i, a := range sh.live {
		assert.Equal(t, int32(i), a.sidx, "index of the actor at %d", i)
	}
	s.leave(&as[0])
	s.leave(&as[2])
	s.leave(&as[3])
	assert.Empty(t, sh.live)
}

// A sender lists only an actor a goroutine holds, an actor is listed at
// most once however many join it, and one held again stays listed when
// the goroutine that let it go leaves (System.join, leave): fLive and
// the list change together, and each change sees fActive.
func TestTheLiveListFollowsTheHeldFlag(t *testing.T) {
	onOneProcessor(t)
	s := NewSystem()
	defer s.wd.Stop()
	var a core
	sh := &s.shards[0]
	require.True(t, s.join(&a, true))
	assert.Empty(t, sh.live, "a sender lists no actor let go")
	a.flags.Or(fActive)
	require.True(t, s.join(&a, true))
	require.True(t, s.join(&a, true))
	require.True(t, s.join(&a, false))
	assert.Equal(t, []*core{&a}, sh.live, "listed once")
	assert.True(t, a.live())
	s.leave(&a)
	assert.Equal(t, []*core{&a}, sh.live, "held: it stays listed")
	a.flags.And(^uint32(fActive))
	s.leave(&a)
	assert.Empty(t, sh.live)
	assert.False(t, a.live())
	require.True(t, s.join(&a, false), "a suspension lists an actor let go")
	assert.Equal(t, []*core{&a}, sh.live)
	s.leave(&a)
	sh.closed = true
	a.flags.Or(fActive)
	assert.False(t, s.join(&a, true), "shutting down")
	assert.Empty(t, sh.live)
	assert.False(t, a.live())
}

// A list grown by a burst of live actors gives its room back as they
// leave.
func TestTheLiveListShrinksAfterABurst(t *testing.T) {
	onOneProcessor(t) // all join shard 0, the processor's
	s := NewSystem()
	defer s.wd.Stop()
	as := make([]core, 1000)
	for i := range as {
		require.True(t, s.join(&as[i], false))
	}
	sh := &s.shards[0]
	grown := cap(sh.live)
	for i := range as {
		s.leave(&as[i])
	}
	assert.Empty(t, sh.live)
	assert.Less(t, cap(sh.live), grown/4)
	assert.LessOrEqual(t, cap(sh.live), 128)
}

// An actor joins a live list of the processor it is listed on, the one
// its shard at Spawn picks, and leaves the list it joined: its live
// shard is set at the join, whatever it was before. A held actor with
// nothing else to do is not listed; a message sent to it while it is
// held lists it (listBusy).
func TestAnActorJoinsItsRunnersProcessorsShard(t *testing.T) {
	onOneProcessor(t)
	s := NewSystem()
	defer s.Shutdown(t.Context())
	a := Spawn(s, 0)
	// Its shard at Spawn: 3; its live shard as if it had last joined
	// elsewhere.
	a.core.flags.Store(3<<shardShift | (nShards-1)<<liveShift)
	inList := func() bool {
		for i := range s.shards {
			sh := &s.shards[i]
			sh.mu.Lock()
			in := slices.Contains(sh.live, &a.core)
			sh.mu.Unlock()
			if in {
				return true
			}
		}
		return false
	}
	var shard uint8
	var before, listed bool
	_, err := Call(a, func(*Proc, int) (int, error) {
		before = inList()
		Tell(a, func(*Proc, int) {})
		shard = a.core.liveShard()
		listed = inList()
		return 0, nil
	}).Get()
	require.NoError(t, err)
	assert.False(t, before, "a running actor with nothing else is not listed")
	assert.Equal(t, uint8(3), shard, "one processor has every shard: the actor's own")
	assert.True(t, listed, "a running actor sent a message is in its shard's live list")
	require.NoError(t, s.WaitIdle(t.Context()))
	for i := range s.shards {
		assert.Empty(t, s.shards[i].live, "an idle actor left the list it joined (shard %d)", i)
	}
}

// Each processor has its own live shards, nShards shared out among them
// (one each past nShards processors, which then share), and an actor's
// shard at Spawn picks one of its processor's.
func TestEachProcessorHasItsOwnLiveShards(t *testing.T) {
	assert.Equal(t, 16, liveSpread(1))
	assert.Equal(t, 8, liveSpread(2))
	assert.Equal(t, 5, liveSpread(3))
	assert.Equal(t, 1, liveSpread(64))
	for _, procs := range []int{1, 2, 3, 4, 16, 64} {
		spread := liveSpread(procs)
		owner := map[uint8]int{}
		for proc := range procs {
			seen := map[uint8]bool{}
			for r := range uint8(nShards) {
				i := liveShardOf(proc, r, spread)
				require.Less(t, i, uint8(nShards))
				seen[i] = true
				if o, ok := owner[i]; ok && procs <= nShards {
					require.Equal(t, proc, o, "%d processors: shard %d is processor %d's and %d's", procs, i, o, proc)
				}
				owner[i] = proc
			}
			assert.Len(t, seen, spread, "%d processors: processor %d's actors spread over its shards", procs, proc)
		}
	}
}

// prefault touches a large block's pages and changes none of its bytes:
// a block of actors it has run over is as make left it.
func TestPrefaultLeavesABlockAsItWas(t *testing.T) {
	for _, n := range []int{1, 511, 512, 5000} { // 64 KiB is 512 actors
		all := make([]Actor[*int], n)
		prefault(unsafe.Pointer(&all[0]), uintptr(n)*unsafe.Sizeof(all[0]))
		b := unsafe.Slice((*byte)(unsafe.Pointer(&all[0])), uintptr(n)*unsafe.Sizeof(all[0]))
		require.Equal(t, -1, slices.IndexFunc(b, func(c byte) bool { return c != 0 }), "%d actors: a byte changed", n)
	}
}
