/* list: build a singly linked list and tear it down, over and over.
 *
 *   list NODES ROUNDS
 *
 * Each round appends NODES nodes of 48 bytes (a next pointer, a key and a
 * 32-byte payload derived from the key) to the tail of a singly linked list,
 * walks the list checking every node, and then frees it from the head: the
 * blocks are freed in the order they were allocated, as when a program
 * drains a queue, a token list or a batch of requests.  Between rounds a
 * few nodes stay alive (every 64th node of a round is kept until the next
 * round ends), so a round does not always start on an empty heap.
 */
#include "common.h"

struct node {
    struct node *next;
    uint64_t key;
    uint64_t payload[4];
};

_Static_assert(sizeof(struct node) == 48, "list nodes are 48 bytes");

static inline uint64_t payload_word(uint64_t key, unsigned k)
{
    return key * 0x9e3779b97f4a7c15ULL + k;
}

static void node_check(const struct node *n, uint64_t key)
{
    if (n->key != key)
        die_corrupt("list key", n->key, key);
    for (unsigned k = 0; k < 4; k++)
        if (n->payload[k] != payload_word(key, k))
            die_corrupt("list payload", n->payload[k], payload_word(key, k));
}

int main(int argc, char **argv)
{
    long nnodes = arg_long(argc, argv, 1, 1000000);
    long rounds = arg_long(argc, argv, 2, 10);
    uint64_t sum = 0;
    struct node *kept = NULL; /* every 64th node of the previous round */

    for (long r = 0; r < rounds; r++) {
        uint64_t seed = mix64(0x6c697374u + (uint64_t)r);
        struct node *head = NULL, **tail = &head;
        struct node *keep = NULL, **keep_tail = &keep;

        for (long i = 0; i < nnodes; i++) {
            struct node *n = xmalloc(sizeof *n);
            n->next = NULL;
            n->key = seed + (uint64_t)i;
            for (unsigned k = 0; k < 4; k++)
                n->payload[k] = payload_word(n->key, k);
            *tail = n;
            tail = &n->next;
        }
        sample_vmas();

        long i = 0;
        for (struct node *n = head; n != NULL; n = n->next, i++) {
            node_check(n, seed + (uint64_t)i);
            sum += n->payload[(unsigned)i & 3] >> 3;
        }
        if (i != nnodes)
            die_corrupt("list length", (uint64_t)i, (uint64_t)nnodes);

        /* drain from the head: free order = allocation order */
        i = 0;
        while (head != NULL) {
            struct node *n = head;
            head = n->next;
            node_check(n, seed + (uint64_t)i);
            if ((i & 63) == 63) {
                n->next = NULL;
                *keep_tail = n;
                keep_tail = &n->next;
            } else {
                xfree(n);
            }
            i++;
        }

        /* the previous round's survivors go now */
        while (kept != NULL) {
            struct node *n = kept;
            kept = n->next;
            for (unsigned k = 0; k < 4; k++)
                if (n->payload[k] != payload_word(n->key, k))
                    die_corrupt("list kept node", n->payload[k], payload_word(n->key, k));
            sum += n->key;
            xfree(n);
        }
        kept = keep;
    }
    while (kept != NULL) {
        struct node *n = kept;
        kept = n->next;
        for (unsigned k = 0; k < 4; k++)
            if (n->payload[k] != payload_word(n->key, k))
                die_corrupt("list kept node", n->payload[k], payload_word(n->key, k));
        sum += n->key;
        xfree(n);
    }
    report("list", sum);
    return 0;
}
