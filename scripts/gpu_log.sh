# Sourced by the GPU machine's scripts once OUT is set. It makes the log
# folder L (OUT/logs) and defines what every such script writes with:
#   S     the summary file (OUT/summary.txt);
#   say   a line to the screen and to S, stamped with the seconds since start;
#   pack  the logs packed as OUT/logs.tgz, for the trip back from the device;
#   J     the machine's cores.
L="$OUT/logs"
mkdir -p "$L"
S="$OUT/summary.txt"
t0=$(date +%s)
say() { echo "[$(($(date +%s) - t0))s] $*" | tee -a "$S"; }
pack() { tar -C "$OUT" -czf "$OUT/logs.tgz" logs 2>/dev/null; }
J=$(nproc)
