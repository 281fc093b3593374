import sys

from thirdshift._cli import main

sys.exit(main())
