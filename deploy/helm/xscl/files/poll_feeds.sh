#!/bin/sh
# The feed poller: every INTERVAL seconds, `xscl poll OPTIONS --stream S URLS...` for each
# stream S of the feed lists (FEEDS_DIR/S.feeds, one URL a line, # comments).
#
#   poll_feeds.sh INTERVAL [xscl poll options...]
#
# One process polls the streams in turn because the spool takes one writer at a time
# (a running `xscl poll --interval` keeps its lock). The lists are read again at every
# pass, so an edited ConfigMap applies without a restart. A failed pass is reported and
# retried at the next one.
set -u
interval="$1"
shift
feeds_dir="${FEEDS_DIR:-/etc/xscl/config}"
while :; do
  for list in "$feeds_dir"/*.feeds; do
    [ -f "$list" ] || continue
    stream="$(basename "$list" .feeds)"
    urls="$(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$list")"
    [ -n "$urls" ] || continue
    # shellcheck disable=SC2086  # one URL a word
    xscl poll "$@" --stream "$stream" $urls || echo "poll_feeds: stream $stream: xscl poll exited $?" >&2
  done
  sleep "$interval"
done
