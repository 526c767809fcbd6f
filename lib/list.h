/*
 * list.h - intrusive doubly linked lists (a circular list with a head node).
 */
#ifndef LIB_LIST_H
#define LIB_LIST_H

#include <stddef.h>
#include <stdbool.h>

struct list_node {
	struct list_node *next;
	struct list_node *prev;
};

#define LIST_HEAD_INIT(h) { &(h), &(h) }
#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

static inline void list_init(struct list_node *h) { h->next = h->prev = h; }
static inline bool list_empty(const struct list_node *h) { return h->next == h; }

/* Insert n between prev and next. */
static inline void list_insert_between(struct list_node *n, struct list_node *prev,
				       struct list_node *next)
{
	n->prev = prev;
	n->next = next;
	prev->next = n;
	next->prev = n;
}

static inline void list_add_tail(struct list_node *h, struct list_node *n)
{
	list_insert_between(n, h->prev, h);
}

static inline void list_add_head(struct list_node *h, struct list_node *n)
{
	list_insert_between(n, h, h->next);
}

/* Unlink n and leave it pointing at itself (so a second delete is harmless). */
static inline void list_del(struct list_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

#define list_for_each(h, it) for ((it) = (h)->next; (it) != (h); (it) = (it)->next)
#define list_for_each_safe(h, it, tmp) \
	for ((it) = (h)->next, (tmp) = (it)->next; (it) != (h); (it) = (tmp), (tmp) = (it)->next)

#endif
