module memguard/cgroupguard

go 1.19
