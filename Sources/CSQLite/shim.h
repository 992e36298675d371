#ifndef LISTD_CSQLITE_SHIM_H
#define LISTD_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
