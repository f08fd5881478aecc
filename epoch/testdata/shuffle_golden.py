"""An independent rendering of epoch.Shuffle (DESIGN §4: permKey and
permute over rng.Mix64 and rng.Below), written from the design's text in
Python integers, for TestShuffleGolden. Prints the shuffled order of
range(N) as comma-separated ids.

    python3 epoch/testdata/shuffle_golden.py SEED EPOCH N
"""
import sys

M64 = (1 << 64) - 1
DOMAIN_BATCHES = 0xB47C_0000_0000_0001


def mix64(z):
    z &= M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def below(r, m):
    # Multiply-shift of the draw's high 32 bits.
    return ((r >> 32) * m) >> 32


def shuffle(n, seed, epoch):
    key = mix64(seed ^ DOMAIN_BATCHES) ^ mix64(epoch | (DOMAIN_BATCHES << 40))
    a = list(range(n))
    for i in range(n - 1, 0, -1):  # Fisher–Yates, slot i's draw is counter i
        j = below(mix64(key + i), i + 1)
        a[i], a[j] = a[j], a[i]
    return a


if __name__ == "__main__":
    seed, epoch, n = (int(x) for x in sys.argv[1:4])
    print(",".join(str(v) for v in shuffle(n, seed, epoch)))
