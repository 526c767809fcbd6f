/*
 * roce_app.c - release of an application's per-connection verbs resources (roce_app.h).
 */
#include <stdlib.h>
#include <string.h>
#include "roce_app.h"

void roce_conn_res_free(struct roce_conn_res *r)
{
	if (r->qp) {
		struct roce_qp_attr e = { .qp_state = ROCE_QPS_ERR };
		struct roce_wc wc[8];
		roce_modify_qp(r->qp, &e, ROCE_QP_STATE);
		while (roce_poll_cq(r->cq, 8, wc) > 0)
			;
		roce_destroy_qp(r->qp);
	}
	if (r->mr)
		roce_dereg_mr(r->mr);
	if (r->cq)
		roce_destroy_cq(r->cq);
	free(r->mem);
	memset(r, 0, sizeof(*r));
}
