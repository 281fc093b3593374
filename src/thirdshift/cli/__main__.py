import sys

from thirdshift.cli import main

sys.exit(main())
