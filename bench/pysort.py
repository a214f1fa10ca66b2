"""pysort: build and sort millions of small Python objects.

    python3 pysort.py N

Builds N small objects (an instance with a per-object dict, a string and a
short list each), sorts them by (name, key), groups them by name into a dict
of lists, sorts the groups by size, then drops everything.  Prints a checksum
that depends only on N (no str hashing is involved in it, so PYTHONHASHSEED
does not matter).
"""
import sys


class Item:
    def __init__(self, key):
        self.key = key
        self.name = "item%05d" % (key % 50021)
        self.tags = [key % 7, key % 11, key % 13]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
    mask = (1 << 64) - 1
    x = 88172645463325252
    items = []
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & mask
        items.append(Item(x >> 20))
    items.sort(key=lambda it: (it.name, it.key))
    total = 0
    for i, it in enumerate(items):
        if it.tags[0] != it.key % 7:
            sys.exit("corrupt: item tags")
        total = (total * 31 + it.key + i) & mask
    groups = {}
    for it in items:
        groups.setdefault(it.name, []).append(it.key)
    order = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    for name, keys in order[:1000]:
        total = (total * 131 + len(keys) + sum(keys)) & mask
    del items, groups, order
    print("pysort checksum=%016x" % total)


main()
