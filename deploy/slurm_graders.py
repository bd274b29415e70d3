# slurm_graders.py: 8 nodes of 2 cores, one worker process per core, TLS only
import os
import tempfile

import dask
from dask_jobqueue import SLURMCluster
from distributed.security import Security

certs = os.path.expanduser("~/attention-cluster")
dask.config.set({"temporary-directory": tempfile.mkdtemp(),        # the scheduler's scratch, private
                 "distributed.scheduler.http.routes": ["distributed.http.health"]})
cluster = SLURMCluster(
    queue="short", cores=2, processes=2, memory="4GB", walltime="02:00:00",
    job_script_prologue=["cd /shared/courses/attention && . .venv/bin/activate",
                         'export DASK_TEMPORARY_DIRECTORY="$(mktemp -d)"',
                         "export DASK_DISTRIBUTED__WORKER__HTTP__ROUTES=\"['distributed.http.health']\""],
    worker_extra_args=["--nthreads", "1", "--no-dashboard", "--dashboard-address", "127.0.0.1:0"],
    protocol="tls://", scheduler_options={"dashboard_address": "127.0.0.1:8787"},
    security=Security(tls_ca_file=f"{certs}/ca.pem", require_encryption=True,
                      tls_client_cert=f"{certs}/client.pem", tls_client_key=f"{certs}/client-key.pem",
                      tls_scheduler_cert=f"{certs}/scheduler.pem", tls_scheduler_key=f"{certs}/scheduler-key.pem",
                      tls_worker_cert=f"{certs}/worker.pem", tls_worker_key=f"{certs}/worker-key.pem"),
)
cluster.scale(jobs=8)
print(cluster.scheduler_address, flush=True)
input("grading on this cluster; press Enter to stop it\n")
