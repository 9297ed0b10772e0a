package stripecharge_test

import "fmt"

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
