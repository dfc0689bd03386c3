/* units: the sizes and durations a job spec is written in, and how schedulers want them.
 *
 * Sizes are binary, as PBS and Slurm read them: 1KB = 1K = 1KiB = 1024 bytes, and so on up to TB.
 * A walltime is `[[HH:]MM:]SS` or `D-HH:MM:SS`; only the leading field may exceed its usual
 * range (`48:00:00` is two days). */
#ifndef DDPJOB_UNITS_H
#define DDPJOB_UNITS_H

#include <stdint.h>
#include <stddef.h>

/* The largest size a spec may give (64 TiB, more than any node has): times a job's nodes
 * (JOB_NODES_MAX, under 2^17) it still fits in 64 bits. */
#define UNITS_SIZE_MAX (1ULL << 46)

/* Parses "380GB", "16G", "512MiB", "100 KB"; a bare number is an error (the unit is required so
 * that nobody asks for 380 bytes), as is one above UNITS_SIZE_MAX. Returns 0 and sets *bytes, or
 * -1. */
int units_parse_size(const char *text, uint64_t *bytes);

/* Formats bytes in the largest unit that divides it exactly: with byte_suffix "760GB" (PBS
 * `-l mem=`), else "760G" (Slurm `--mem=`). Sizes below 1 KiB print in KB rounded up. */
void units_format_size(uint64_t bytes, int byte_suffix, char *out, size_t outsize);

/* Parses a walltime into seconds. Returns 0 or -1. */
int units_parse_walltime(const char *text, uint64_t *seconds);

/* HH:MM:SS with hours unbounded (PBS `-l walltime=`). */
void units_format_hms(uint64_t seconds, char *out, size_t outsize);

/* D-HH:MM:SS when a day or more, else HH:MM:SS (Slurm `--time=`). */
void units_format_days_hms(uint64_t seconds, char *out, size_t outsize);

#endif
