"""One attempt's processes while they run: started, streamed, stopped and signalled; hangs caught with every
rank's stack; the run's status written as it goes, and stop requests from other processes obeyed."""
