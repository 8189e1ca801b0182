package migrate

// ZooKeeperPassword is the password a ZooKeeper server gives session id:
// SessionTrackerImpl seeds java.util.Random with id ^ 0xB3415C00 and takes
// 16 bytes of it (nextBytes). zkbridge gives imported sessions this
// password, so a client that was connected to ZooKeeper resumes its
// session on zkbridge with the id and password it holds.
func ZooKeeperPassword(sessionID int64) []byte {
	r := newJavaRandom(sessionID ^ 0xB3415C00)
	out := make([]byte, 16)
	r.nextBytes(out)
	return out
}

// javaRandom is java.util.Random: a 48-bit linear congruential generator.
// Only the low 48 bits of the seed matter.
type javaRandom struct{ seed int64 }

const (
	javaMultiplier = 0x5DEECE66D
	javaAddend     = 0xB
	javaMask       = (1 << 48) - 1
)

func newJavaRandom(seed int64) *javaRandom {
	return &javaRandom{seed: (seed ^ javaMultiplier) & javaMask}
}

func (r *javaRandom) next(bits uint) int32 {
	r.seed = (r.seed*javaMultiplier + javaAddend) & javaMask
	return int32(r.seed >> (48 - bits))
}

// nextBytes fills b as Random.nextBytes: each nextInt gives four bytes,
// least significant first.
func (r *javaRandom) nextBytes(b []byte) {
	for i := 0; i < len(b); {
		rnd := r.next(32)
		for n := min(len(b)-i, 4); n > 0; n-- {
			b[i] = byte(rnd)
			rnd >>= 8
			i++
		}
	}
}
