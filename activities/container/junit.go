package container

import (
	"encoding/xml"
	"fmt"

	"github.com/gantry-cd/gantry/contract"
)

// junitCase is a <testcase>; a <failure> or <error> child fails it, <skipped> skips it.
type junitCase struct {
	Class   string    `xml:"classname,attr"`
	Name    string    `xml:"name,attr"`
	Failure *struct{} `xml:"failure"`
	Error   *struct{} `xml:"error"`
	Skipped *struct{} `xml:"skipped"`
}

// junitSuite is a <testsuite>, which may nest suites.
type junitSuite struct {
	Cases  []junitCase  `xml:"testcase"`
	Suites []junitSuite `xml:"testsuite"`
}

// addJUnit adds one JUnit XML report (a <testsuites> or <testsuite> document) to a summary.
func addJUnit(sum *contract.TestSummary, data []byte) error {
	var root struct {
		XMLName xml.Name
		junitSuite
	}
	if err := xml.Unmarshal(data, &root); err != nil {
		return err
	}
	if root.XMLName.Local != "testsuites" && root.XMLName.Local != "testsuite" {
		return fmt.Errorf("root element <%s> is not <testsuites> or <testsuite>", root.XMLName.Local)
	}
	var walk func(s junitSuite)
	walk = func(s junitSuite) {
		for _, c := range s.Cases {
			sum.Total++
			switch {
			case c.Failure != nil || c.Error != nil:
				sum.Failed++
				if len(sum.Failing) < contract.MaxFailing {
					name := c.Name
					if c.Class != "" {
						name = c.Class + "." + c.Name
					}
					sum.Failing = append(sum.Failing, name)
				}
			case c.Skipped != nil:
				sum.Skipped++
			}
		}
		for _, inner := range s.Suites {
			walk(inner)
		}
	}
	walk(root.junitSuite)
	sum.Reports++
	return nil
}
