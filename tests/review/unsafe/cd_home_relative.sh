# rule: SH-FS-001
# attempts: corral-home: Read-only file system
# cd alone goes home (/tmp in the jail), then up and into /etc
cd
cd ../etc
echo x > corral-home
