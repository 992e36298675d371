#ifndef LISTD_CLIBPQ_SHIM_H
#define LISTD_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
