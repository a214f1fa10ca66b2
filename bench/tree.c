/* tree: build and tear down a large linked structure.
 *
 *   tree NODES ROUNDS
 *
 * Each round inserts NODES random keys into an (unbalanced) binary search
 * tree; every node owns a separately allocated name of 16 - 128 bytes.  Then
 * half of the names are reallocated to new sizes and rewritten, the whole
 * tree is walked in order (keys must come out sorted, names must hold their
 * pattern), and the tree is torn down node by node.
 */
#include "common.h"

struct node {
    uint64_t key;
    struct node *left, *right;
    char *name;
    uint32_t name_len;
};

static struct node **stack;
static size_t stack_cap;

static void push(size_t *sp, struct node *n)
{
    if (*sp == stack_cap) {
        stack_cap = stack_cap ? stack_cap * 2 : 256;
        stack = xrealloc(stack, stack_cap * sizeof *stack);
    }
    stack[(*sp)++] = n;
}

static void fill_name(struct node *n)
{
    unsigned char c = (unsigned char)('a' + n->key % 26);
    memset(n->name, c, n->name_len - 1);
    n->name[n->name_len - 1] = '\0';
}

static void check_name(const struct node *n)
{
    char c = (char)('a' + n->key % 26);
    if (n->name[0] != c || n->name[n->name_len / 2] != c || n->name[n->name_len - 2] != c ||
        n->name[n->name_len - 1] != '\0')
        die_corrupt("node name", (uint64_t)(unsigned char)n->name[0], (uint64_t)c);
}

int main(int argc, char **argv)
{
    long nnodes = arg_long(argc, argv, 1, 1000000);
    long rounds = arg_long(argc, argv, 2, 3);
    uint64_t sum = 0;

    for (long r = 0; r < rounds; r++) {
        uint64_t rng = mix64(0x7472656500u + (uint64_t)r);
        struct node *root = NULL;

        for (long i = 0; i < nnodes; i++) {
            struct node *n = xmalloc(sizeof *n);
            n->key = rng_next(&rng);
            n->left = n->right = NULL;
            n->name_len = (uint32_t)rng_size(&rng, 16, 128);
            n->name = xmalloc(n->name_len);
            fill_name(n);
            struct node **link = &root;
            while (*link != NULL)
                link = n->key < (*link)->key ? &(*link)->left : &(*link)->right;
            *link = n;
        }
        sample_vmas();

        /* in-order walk: rename every other node, check order and names */
        size_t sp = 0;
        struct node *cur = root;
        uint64_t prev = 0, idx = 0;
        while (cur != NULL || sp > 0) {
            while (cur != NULL) {
                push(&sp, cur);
                cur = cur->left;
            }
            cur = stack[--sp];
            if (cur->key < prev)
                die_corrupt("tree order", cur->key, prev);
            prev = cur->key;
            check_name(cur);
            if (idx & 1) {
                cur->name_len = (uint32_t)(16 + mix64(cur->key) % 240);
                cur->name = xrealloc(cur->name, cur->name_len);
                fill_name(cur);
            }
            sum += cur->key * (idx + 1) + cur->name_len;
            idx++;
            cur = cur->right;
        }
        if (idx != (uint64_t)nnodes)
            die_corrupt("tree size", idx, (uint64_t)nnodes);
        sample_vmas();

        /* teardown: a node's children are queued before the node is freed */
        sp = 0;
        if (root != NULL)
            push(&sp, root);
        while (sp > 0) {
            struct node *n = stack[--sp];
            if (n->left != NULL)
                push(&sp, n->left);
            if (n->right != NULL)
                push(&sp, n->right);
            check_name(n);
            xfree(n->name);
            xfree(n);
        }
    }
    xfree(stack);
    report("tree", sum);
    return 0;
}
