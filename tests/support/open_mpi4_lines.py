"""Lines of Open MPI 4's `mpirun --tag-output`, which tags each piece of a rank's output, not each line.

They are algo-1's log of a real 3-host `mode: mpi` run under Open MPI 4.1.4 (Debian's, as in SageMaker's images):
each rank printed `step=0 loss=`, its value, then its newline, apart, and a tqdm-like bar with carriage returns;
rank 2 then raised while rank 0 printed dots without a newline. A bar's carriage returns are line breaks in the
log (each state a line)."""

T0, T1, T2 = "[1,mpirank:0,algo-1]", "[1,mpirank:1,algo-2]", "[1,mpirank:2,algo-3]"
STEP_AND_BAR = f"""\
{T1}<stdout>:step=0 loss={T2}<stdout>:step=0 loss={T0}<stdout>:step=0 loss={T1}<stdout>:1.00{T0}<stdout>:0.00{T2}<stdout>:2.00{T1}<stdout>:
{T0}<stdout>:
{T2}<stdout>:
{T0}<stderr>:
  0%|bar| 0/2 [rank 0]{T2}<stderr>:
  0%|bar| 0/2 [rank 2]{T1}<stderr>:
  0%|bar| 0/2 [rank 1]{T0}<stderr>:
 50%|bar| 1/2 [rank 0]{T1}<stderr>:
 50%|bar| 1/2 [rank 1]{T2}<stderr>:
 50%|bar| 1/2 [rank 2]{T0}<stderr>:
100%|bar| 2/2 [rank 0]{T1}<stderr>:
100%|bar| 2/2 [rank 1]{T2}<stderr>:
100%|bar| 2/2 [rank 2]{T1}<stderr>:
{T2}<stderr>:
{T0}<stderr>:""".splitlines()
RAISED = f"""\
{T0}<stdout>:.{T0}<stdout>:.{T0}<stdout>:..{T0}<stdout>:...{T2}<stderr>:Traceback (most recent call last):
{T0}<stdout>:.....{T2}<stderr>:  File "<frozen runpy>", line 88, in _run_code
{T2}<stderr>:  File "/usr/lib/python3/dist-packages/mpi4py/__main__.py", line 7, in <module>
{T2}<stderr>:    {T2}<stderr>:main(){T2}<stderr>:
{T2}<stderr>:  File "/opt/ml/code/pieces.py", line 28, in <module>
{T2}<stderr>:    {T2}<stderr>:raise ValueError("shape mismatch in rank 2"){T2}<stderr>:
{T2}<stderr>:ValueError{T2}<stderr>:: {T2}<stderr>:shape mismatch in rank 2{T2}<stderr>:
--------------------------------------------------------------------------
MPI_ABORT was invoked on rank 2 in communicator MPI_COMM_WORLD
with errorcode 1.
--------------------------------------------------------------------------
{T0}<stdout>:......""".splitlines()
TRACEBACK = [f"{T2}<stderr>:{line}" for line in (
    "Traceback (most recent call last):", '  File "<frozen runpy>", line 88, in _run_code',
    '  File "/usr/lib/python3/dist-packages/mpi4py/__main__.py", line 7, in <module>', "    main()",
    '  File "/opt/ml/code/pieces.py", line 28, in <module>', '    raise ValueError("shape mismatch in rank 2")',
    "ValueError: shape mismatch in rank 2")]
MPIRUNS_OWN = ["-" * 74, "MPI_ABORT was invoked on rank 2 in communicator MPI_COMM_WORLD", "with errorcode 1.",
               "-" * 74]
DOTS = f"{T0}<stdout>:" + "." * 18
"""Rank 0's dots, which it never ended with a newline: handed on when the log ends."""
