/* Dropping one capability for good before exec: from the bounding set
 * (which needs CAP_SETPCAP; without it no_new_privs is set instead, so that
 * no setuid or file-capability program run later can gain it back), the
 * ambient, inheritable, permitted and effective sets. */
#ifndef SBX_CAPDROP_H
#define SBX_CAPDROP_H

/* 0, or -1 with errno and *step naming the call that failed. *nnp is set to
 * 1 when no_new_privs had to stand in for the bounding set. */
int sbx_cap_drop(int cap, const char **step, int *nnp);

#endif
