/* fake_auth_entropy.h - the authentication tests' entropy stream (fake_auth_entropy.c). */
#ifndef TESTS_FAKE_AUTH_ENTROPY_H
#define TESTS_FAKE_AUTH_ENTROPY_H

/* Start the stream over at byte 0. */
void fake_auth_entropy_reset(void);

#endif
