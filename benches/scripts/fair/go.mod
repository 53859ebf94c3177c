module fair

go 1.21
