DROP TABLE rides;
