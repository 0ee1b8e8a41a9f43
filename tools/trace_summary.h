/* `portable trace summary FILE` (trace_summary.c). */
#ifndef PORTABLE_TOOL_TRACE_SUMMARY_H
#define PORTABLE_TOOL_TRACE_SUMMARY_H

#include <stdio.h>

/* Prints the summary tables of the trace at path to out: 0, or 1 with the
 * reason on stderr when the file is unreadable or not a trace. */
int pt_tool_trace_summary(const char *path, FILE *out);

#endif
