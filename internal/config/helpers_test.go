package config

import (
	"fmt"
	"strconv"
)

func itoa(i int) string { return strconv.Itoa(i) }

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
