/*
 * poller.c - the clock reading the poll loop shares with its pollers (poller.h).
 */
#include "poller.h"

uint64_t poller_pass_now_ns;
