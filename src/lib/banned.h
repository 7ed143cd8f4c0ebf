/* banned.h: functions that are easy to misuse, made compile errors (after
 * git's banned.h).  Use snprintf, strtoul/strtoull with checks, strtok_r.
 * Threads: macros only.
 * Internal to src/lib/: every file gets it through util.h. */
#ifndef CORRAL_BANNED_H
#define CORRAL_BANNED_H

#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef atoi
#define atoi(x) BANNED(atoi)
#undef gets
#define gets(x) BANNED(gets)

#endif
