/*
 * roce_qp_up.h - the RoCE tests' QP bring-up: an RC QP moved RESET -> INIT -> RTR (and on to
 * RTS) with the caller's attributes and, for each transition, the attribute mask the verbs
 * require of it (drivers/rdma/roce_qp.c's table), its path to a peer IPv4 address.
 */
#ifndef TESTS_UNIT_DRIVERS_RDMA_ROCE_QP_UP_H
#define TESTS_UNIT_DRIVERS_RDMA_ROCE_QP_UP_H

#include <criterion/criterion.h>
#include "drivers/rdma/roce_verbs.h"

/* RESET -> INIT -> RTR with a's attributes (a->qp_state and the path's GID are set here),
 * the path to peer. */
static inline void roce_test_qp_rtr(struct roce_qp *qp, struct roce_qp_attr *a, uint32_t peer)
{
	roce_gid_from_ipv4(peer, &a->ah_attr.dgid);
	a->qp_state = ROCE_QPS_INIT;
	cr_assert_eq(roce_modify_qp(qp, a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS), 0);
	a->qp_state = ROCE_QPS_RTR;
	cr_assert_eq(roce_modify_qp(qp, a, ROCE_QP_STATE | ROCE_QP_AV | ROCE_QP_PATH_MTU | ROCE_QP_DEST_QPN |
						  ROCE_QP_RQ_PSN | ROCE_QP_MAX_DEST_RD_ATOMIC | ROCE_QP_MIN_RNR_TIMER), 0);
}

/* roce_test_qp_rtr, then RTR -> RTS. */
static inline void roce_test_qp_rts(struct roce_qp *qp, struct roce_qp_attr *a, uint32_t peer)
{
	roce_test_qp_rtr(qp, a, peer);
	a->qp_state = ROCE_QPS_RTS;
	cr_assert_eq(roce_modify_qp(qp, a, ROCE_QP_STATE | ROCE_QP_SQ_PSN | ROCE_QP_TIMEOUT | ROCE_QP_RETRY_CNT |
						  ROCE_QP_RNR_RETRY | ROCE_QP_MAX_QP_RD_ATOMIC), 0);
}

#endif
