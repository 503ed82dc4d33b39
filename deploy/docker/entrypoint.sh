#!/bin/bash
# The image's entry point (run under tini): the role is the first argument.
#
#   driver ARGS...    Spark's driver pod in cluster mode (spark-submit --deploy-mode cluster,
#                     the spark-operator): spark-submit in client mode inside the pod
#   executor          an executor pod Spark created: the executor backend, configured by
#                     the SPARK_* variables the driver sets on the pod
#   anything else     the xscl command line: `xscl ARGS...` (e.g. serve, poll, subscribe)
set -euo pipefail

role="${1:-}"
case "$role" in
  driver)
    shift
    exec "$SPARK_HOME/bin/spark-submit" \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS:-0.0.0.0}" \
      --deploy-mode client "$@"
    ;;
  executor)
    shift
    # SPARK_JAVA_OPT_0, _1, ... hold the executor's JVM options, in order
    java_opts=()
    while IFS= read -r name; do
      java_opts+=("${!name}")
    done < <(compgen -v SPARK_JAVA_OPT_ | sort -t_ -k4 -n)
    classpath="$SPARK_HOME/jars/*"
    [ -n "${SPARK_CONF_DIR:-}" ] && classpath="$SPARK_CONF_DIR:$classpath"
    [ -n "${HADOOP_CONF_DIR:-}" ] && classpath="$HADOOP_CONF_DIR:$classpath"
    [ -n "${SPARK_CLASSPATH:-}" ] && classpath="$classpath:$SPARK_CLASSPATH"
    exec "$JAVA_HOME/bin/java" "${java_opts[@]}" \
      "-Xms$SPARK_EXECUTOR_MEMORY" "-Xmx$SPARK_EXECUTOR_MEMORY" \
      -cp "$classpath" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" \
      --executor-id "$SPARK_EXECUTOR_ID" \
      --cores "$SPARK_EXECUTOR_CORES" \
      --app-id "$SPARK_APPLICATION_ID" \
      --hostname "$SPARK_EXECUTOR_POD_IP" \
      --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID" \
      --podName "$SPARK_EXECUTOR_POD_NAME"
    ;;
  *)
    exec xscl "$@"
    ;;
esac
