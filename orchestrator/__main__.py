from orchestrator.cli.main import main

main()
