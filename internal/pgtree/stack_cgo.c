//go:build cgo && unix

#include <pthread.h>
#include "_cgo_export.h"

static void *pgtree_worker_main(void *arg) {
	(void)arg;
	pgtreeStackWorker();
	return NULL;
}

/* pgtree_start_worker starts a detached thread with a stack of stack_size bytes that
   runs pgtreeStackWorker; it returns 0 or an errno value. */
int pgtree_start_worker(size_t stack_size) {
	pthread_attr_t attr;
	pthread_t thread;
	int rc = pthread_attr_init(&attr);
	if (rc != 0) {
		return rc;
	}
	rc = pthread_attr_setstacksize(&attr, stack_size);
	if (rc == 0) {
		rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	}
	if (rc == 0) {
		rc = pthread_create(&thread, &attr, pgtree_worker_main, NULL);
	}
	pthread_attr_destroy(&attr);
	return rc;
}
