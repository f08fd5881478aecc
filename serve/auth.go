package serve

import (
	"crypto/sha256"
	"crypto/subtle"
)

// The token of a hello is compared as SHA-256 digests, in constant time:
// neither the time taken nor the digest's fixed length tells a guesser how
// much of the token (or its length) was right.

func tokenDigest(token []byte) []byte {
	d := sha256.Sum256(token)
	return d[:]
}

// tokenMatches reports whether got is the token whose digest is want.
func tokenMatches(want, got []byte) bool {
	return subtle.ConstantTimeCompare(want, tokenDigest(got)) == 1
}
